//! DeleteMirror at the admin entry: the check that every partition is STOPPED, the
//! forward to the controller, then the tombstones of the mirror's stored states.

use super::*;
use crate::protocol::{CoordinatorRequest, CoordinatorResponse, MirrorRequest, MirrorResponse};

impl MirrorManager {
    // ----- DeleteMirror at the admin entry -----

    /// DeleteMirror from an admin; see the module doc.
    pub fn handle_delete_mirror(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        from: NodeId,
        correlation_id: u64,
        mirror: String,
    ) {
        let delete_id = self.next_delete_id;
        self.next_delete_id += 1;
        let mut pending = PendingDelete {
            reply_to: from,
            correlation_id,
            mirror: mirror.clone(),
            waiting: 0,
            refused: None,
            controller_answer: None,
        };
        let mut reads = Vec::new();
        for (coordinator_partition, ids) in
            MirrorDirectory::new(host.image(), host.node_id().cluster())
                .keys_by_coordinator(&mirror)
        {
            match MirrorDirectory::new(host.image(), host.node_id().cluster())
                .coordinator_of_partition(coordinator_partition)
            {
                Some(coordinator) => reads.push((coordinator, coordinator_partition, ids)),
                None => pending.refused = Some(ErrorCode::CoordinatorNotAvailable),
            }
        }
        if pending.refused.is_some() {
            self.finish_delete(host, pending, None);
            return;
        }
        pending.waiting = reads.len();
        self.deletes.insert(delete_id, pending);
        if reads.is_empty() {
            self.delete_forward(host, now_ms, delete_id);
            return;
        }
        for (coordinator, coordinator_partition, partitions) in reads {
            let request = Request::Coordinator(CoordinatorRequest::ReadMirrorStates {
                coordinator_partition,
                mirror: mirror.clone(),
                partitions,
            });
            let what = SentRequest::DeleteCheck(delete_id);
            self.send_mirror_request(host, now_ms, coordinator, request, what);
        }
    }

    /// Counts one coordinator answer of the current phase; the pending delete once every
    /// answer of the phase is in.
    pub(super) fn delete_phase_answered(
        &mut self,
        host: &mut impl MirrorHost,
        delete_id: u64,
        refusal: Option<ErrorCode>,
    ) -> Option<PendingDelete> {
        let pending = self.deletes.get_mut(&delete_id)?;
        if pending.refused.is_none() {
            pending.refused = refusal;
        }
        pending.waiting -= 1;
        if pending.waiting > 0 {
            return None;
        }
        if pending.refused.is_some() {
            let pending = self.deletes.remove(&delete_id).expect("present");
            self.finish_delete(host, pending, None);
            return None;
        }
        Some(pending.clone())
    }

    pub(super) fn delete_check_answered(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        delete_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let refusal = match response {
            Ok(Response::Coordinator(CoordinatorResponse::ReadMirrorStates {
                error: ErrorCode::None,
                partitions,
                ..
            })) => partitions.iter().find_map(|status| {
                if !status.error.is_none() {
                    Some(status.error)
                } else if status.state != MirrorState::Stopped {
                    Some(ErrorCode::InvalidClusterMirrorState)
                } else {
                    None
                }
            }),
            Ok(Response::Coordinator(CoordinatorResponse::ReadMirrorStates { error, .. })) => {
                Some(error)
            }
            Ok(_) => Some(ErrorCode::InvalidRequest),
            Err(error) => Some(error),
        };
        if self
            .delete_phase_answered(host, delete_id, refusal)
            .is_some()
        {
            self.delete_forward(host, now_ms, delete_id);
        }
    }

    pub(super) fn delete_send_tombstones(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        delete_id: u64,
    ) {
        let partitions = partition_count(host.image(), MIRROR_STATE_TOPIC);
        let coordinators: Option<Vec<(i32, NodeId)>> = (0..partitions)
            .map(|partition| {
                Some((
                    partition,
                    MirrorDirectory::new(host.image(), host.node_id().cluster())
                        .coordinator_of_partition(partition)?,
                ))
            })
            .collect();
        // The controller has deleted the mirror: tombstoning is clean-up after it (spec §3.7),
        // and the admin gets the controller's answer whatever becomes of it. A tombstone that
        // cannot be written now is not retried (not modelled: the KIP's periodic clean-up).
        let Some(coordinators) = coordinators.filter(|found| !found.is_empty()) else {
            let pending = self.deletes.remove(&delete_id).expect("present");
            let answer = pending.controller_answer;
            self.finish_delete(host, pending, answer);
            return;
        };
        let pending = self.deletes.get_mut(&delete_id).expect("present");
        pending.waiting = coordinators.len();
        let mirror = pending.mirror.clone();
        for (coordinator_partition, node) in coordinators {
            let request = Request::Coordinator(CoordinatorRequest::DeleteMirrorStates {
                coordinator_partition,
                mirror: mirror.clone(),
            });
            let what = SentRequest::DeleteTombstones(delete_id);
            self.send_mirror_request(host, now_ms, node, request, what);
        }
    }

    /// The last phase: once every tombstone write is answered, the admin gets the
    /// controller's acceptance (or the first tombstone error, as before the reorder).
    pub(super) fn delete_tombstones_answered(
        &mut self,
        host: &mut impl MirrorHost,
        delete_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let refusal = match response {
            Ok(Response::Coordinator(CoordinatorResponse::DeleteMirrorStates { error })) => {
                (!error.is_none()).then_some(error)
            }
            Ok(_) => Some(ErrorCode::InvalidRequest),
            Err(error) => Some(error),
        };
        if refusal.is_some() {
            host.lend()
                .events
                .push(BrokerEvent::MirrorTombstonesRefused { delete_id });
        }
        // The controller has deleted the mirror: a refused tombstone (a `__mirror_state`
        // partition short of its ISR) must not turn that into a retriable error, which the
        // admin would retry into ClusterMirrorNotFound (generated seed 9970000000001153).
        let Some(pending) = self.deletes.get_mut(&delete_id) else {
            return;
        };
        pending.waiting = pending.waiting.saturating_sub(1);
        if pending.waiting == 0 {
            let pending = self.deletes.remove(&delete_id).expect("present");
            let answer = pending.controller_answer;
            self.finish_delete(host, pending, answer);
        }
    }

    pub(super) fn delete_forward(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        delete_id: u64,
    ) {
        let mirror = self.deletes[&delete_id].mirror.clone();
        let controller = host.controller();
        let request = Request::Mirror(MirrorRequest::DeleteMirror { name: mirror });
        let what = SentRequest::DeleteForward(delete_id);
        self.send_mirror_request(host, now_ms, controller, request, what);
    }

    /// The controller's answer: a refusal is relayed at once and nothing is tombstoned; an
    /// acceptance starts the tombstone phase.
    pub(super) fn delete_forward_answered(
        &mut self,
        host: &mut impl MirrorHost,
        now_ms: i64,
        delete_id: u64,
        response: Result<Response, ErrorCode>,
    ) {
        let error = match response {
            Ok(Response::Mirror(MirrorResponse::DeleteMirror { error })) => error,
            Ok(_) => ErrorCode::InvalidRequest,
            Err(error) => error,
        };
        if !error.is_none() {
            if let Some(pending) = self.deletes.remove(&delete_id) {
                self.finish_delete(host, pending, Some(error));
            }
            return;
        }
        let Some(pending) = self.deletes.get_mut(&delete_id) else {
            return;
        };
        pending.controller_answer = Some(error);
        self.delete_send_tombstones(host, now_ms, delete_id);
    }

    /// Answers the admin: the controller's answer if it got that far, else the refusal.
    pub(super) fn finish_delete(
        &mut self,
        host: &mut impl MirrorHost,
        pending: PendingDelete,
        controller_answer: Option<ErrorCode>,
    ) {
        let error = controller_answer
            .or(pending.refused)
            .unwrap_or(ErrorCode::None);
        host.lend().outbox.respond(
            pending.reply_to,
            pending.correlation_id,
            Response::Mirror(MirrorResponse::DeleteMirror { error }),
        );
    }
}
