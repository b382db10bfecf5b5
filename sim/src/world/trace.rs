//! What the world hands the replay trace (`crate::commands::replay`): the span each node's
//! driver runs in, so every line a node's input causes is attributed to it, and the
//! watermarks that let a driver trace what a state machine reported while it handled one input
//! (broker events, controller metadata records). Only observes: nothing here feeds the trace
//! hash, draws a random number or awaits.

use mirrorsim::protocol::{NodeId, PartitionSummary};

use super::NodeState;

/// The name of the span each node's driver runs in.
pub(crate) const NODE_SPAN: &str = "node";

/// The span a node's driver (or a supervisor line about the node) runs in.
pub fn node_span(node: NodeId, incarnation: u64) -> tracing::Span {
    tracing::info_span!(NODE_SPAN, node = %node, incarnation)
}

/// What a node's state machine had reported before an input, so that what the input added can
/// be traced after it: a broker's pending events, a controller's metadata log end.
pub(crate) enum Watermark {
    /// Events the broker had not handed out yet.
    BrokerEvents(usize),
    /// The controller's metadata log end offset.
    MetadataLogEnd(i64),
    /// Nothing to trace for this kind of node.
    None,
}

impl Watermark {
    /// Where `state` stands now.
    pub(crate) fn of(state: &NodeState) -> Self {
        match state {
            NodeState::Broker(broker) => Self::BrokerEvents(broker.pending_events().len()),
            NodeState::Controller(controller) => Self::MetadataLogEnd(controller.log_end_offset()),
            _ => Self::None,
        }
    }

    /// Traces what `state` added since this watermark: broker events (state changes at INFO,
    /// appends at DEBUG) and the controller's new metadata records (INFO, partitions named).
    pub(crate) fn trace_since(self, state: &NodeState) {
        match (self, state) {
            (Self::BrokerEvents(seen), NodeState::Broker(broker)) => {
                for event in broker.pending_events().iter().skip(seen) {
                    if event.is_state_change() {
                        tracing::info!("{event}");
                    } else {
                        tracing::debug!("{event}");
                    }
                }
            }
            (Self::MetadataLogEnd(end), NodeState::Controller(controller)) => {
                let records = controller.records();
                let new = usize::try_from(end).unwrap_or(records.len());
                for (offset, record) in records.iter().enumerate().skip(new) {
                    trace_metadata_record(controller.image(), offset, record);
                }
            }
            _ => {}
        }
    }
}

/// One metadata record the controller wrote, a partition named by its topic.
fn trace_metadata_record(
    image: &mirrorsim::metadata::MetadataImage,
    offset: usize,
    record: &mirrorsim::metadata::MetadataRecord,
) {
    match record {
        mirrorsim::metadata::MetadataRecord::Partition(partition) => {
            let summary = PartitionSummary {
                record: partition,
                topic: image.topic_name(partition.topic_id),
            };
            tracing::info!("metadata {offset}: Partition {summary}");
        }
        other => tracing::info!("metadata {offset}: {other}"),
    }
}
