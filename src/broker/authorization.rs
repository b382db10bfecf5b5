//! The broker's authorization of a KIP-1279 mirror's requests at its source cluster: a Fetch
//! needs `Read` on each topic, a Metadata request and a LastMirroredEpochLookup `Describe`
//! (`crate::metadata::authorizer` decides, over this broker's image). A refused topic is
//! answered `TopicAuthorizationFailed` as Kafka answers it: per partition in a Fetch (the
//! others are read as usual), per topic in a Metadata request naming it, and left out of one
//! asking for every topic (Kafka lists only the topics a principal may describe). Each refusal
//! is reported as [`BrokerEvent::AuthorizationDenied`].

use super::*;
use crate::metadata::authorizer::{AclOperation, Authorizer};
use crate::metadata::TopicMetadata;
use crate::protocol::{FetchPartition, FetchPartitionResponse};

impl<S: BrokerStorage> Broker<S> {
    /// Whether `principal` may perform `operation` on `topic` here; a refusal is reported.
    pub(super) fn authorized(
        &mut self,
        principal: Option<&str>,
        operation: AclOperation,
        topic: &str,
    ) -> bool {
        let authorizer = Authorizer {
            config: self.config.authorizer,
            acls: &self.image.acls,
        };
        if authorizer.authorize_topic(principal, operation, topic) {
            return true;
        }
        self.events.push(BrokerEvent::AuthorizationDenied {
            principal: principal.unwrap_or_default().to_owned(),
            operation: operation.name(),
            topic: topic.to_owned(),
        });
        false
    }

    /// Whether this broker judges a request of `principal` at all (it has an authorizer, and
    /// the request a principal): the fast path of every request that does not.
    fn authorizes(&self, principal: Option<&str>) -> bool {
        principal.is_some() && self.config.authorizer.is_some()
    }

    /// The partitions of a Fetch `principal` may not read, by their index in `partitions`;
    /// empty when all may be read.
    pub(super) fn unreadable_partitions(
        &mut self,
        principal: Option<&str>,
        partitions: &[FetchPartition],
    ) -> Vec<usize> {
        if !self.authorizes(principal) {
            return Vec::new();
        }
        (0..partitions.len())
            .filter(|&index| {
                let topic = partitions[index].topic_partition.topic.to_string();
                !self.authorized(principal, AclOperation::Read, &topic)
            })
            .collect()
    }

    /// A Fetch's answers with `TopicAuthorizationFailed` at the `refused` indexes of
    /// `partitions` and the answers of the partitions read (`read`, in order) elsewhere.
    pub(super) fn merge_refused_fetch_answers(
        partitions: &[FetchPartition],
        refused: &[usize],
        read: Vec<FetchPartitionResponse>,
    ) -> Vec<FetchPartitionResponse> {
        let mut read = read.into_iter();
        (0..partitions.len())
            .map(|index| {
                if refused.contains(&index) {
                    FetchPartitionResponse::error(
                        &partitions[index].topic_partition,
                        ErrorCode::TopicAuthorizationFailed,
                    )
                } else {
                    read.next().expect("one answer per partition read")
                }
            })
            .collect()
    }

    /// A Metadata answer's topics as `principal` may see them: a named topic it may not
    /// describe is `TopicAuthorizationFailed` (nothing else about it), and one of an answer
    /// for every topic is left out.
    pub(super) fn authorize_metadata(
        &mut self,
        principal: Option<&str>,
        named: bool,
        topics: Vec<TopicMetadata>,
    ) -> Vec<TopicMetadata> {
        if !self.authorizes(principal) {
            return topics;
        }
        topics
            .into_iter()
            .filter_map(|topic| {
                if self.authorized(principal, AclOperation::Describe, &topic.name) {
                    Some(topic)
                } else if named {
                    Some(TopicMetadata {
                        error: ErrorCode::TopicAuthorizationFailed,
                        topic_id: None,
                        partitions: Vec::new(),
                        ..topic
                    })
                } else {
                    None
                }
            })
            .collect()
    }
}
