//! The generated workload: producers (idempotent and transactional), consumers and the groups
//! that resume on the other cluster.

use super::*;

impl Draft {
    /// Producers and consumers on every cluster.
    pub(super) fn draw_workloads(&mut self, links: &[Link]) {
        let sources: Vec<(usize, String)> = if links.is_empty() {
            vec![(0, TOPIC_NAMES[0].to_owned())]
        } else {
            links
                .iter()
                .filter(|link| {
                    // A chain's second hop has no producer of its own on the middle cluster
                    // until it fails over.
                    !(self.shape == "chain" && link.source == 1)
                })
                .flat_map(|link| link.topics.iter().map(move |t| (link.source, t.clone())))
                .collect()
        };
        for (cluster, topic) in &sources {
            self.producer(*cluster, topic, None);
            if self.chance(0.5) {
                self.transactional_producer(*cluster, topic, None);
            }
            if self.chance(0.6) {
                self.consumer(*cluster, topic, None);
            }
        }
        for (cluster, topic) in self.loops.clone() {
            let committing = self.producers.iter().any(|p| {
                p.transactional
                    && p.topic.get_ref() == &topic
                    && *p.cluster.get_ref() == letter(cluster)
            });
            if !committing {
                self.transactional_producer(cluster, &topic, None);
            }
        }
        let destinations: Vec<(usize, String)> = self
            .topics
            .iter()
            .map(|t| {
                (
                    crate::scenario::cluster_index(t.cluster.get_ref()).expect("a letter"),
                    t.name.clone(),
                )
            })
            .filter(|key| !sources.contains(key))
            .collect();
        for (cluster, topic) in destinations {
            if self.early_writers.contains(&(cluster, topic.clone())) {
                self.producer(cluster, &topic, None);
            }
            let from: Vec<u64> = self
                .writers_from
                .iter()
                .filter(|(c, t, _)| *c == cluster && *t == topic)
                .map(|(_, _, at)| *at)
                .collect();
            for at in from {
                self.producer(cluster, &topic, Some(at));
            }
            let failover = self.failovers.get(&(cluster, topic.clone())).copied();
            // Before the failover a destination producer is refused (read-only); after it, it
            // writes behind the MIRROR_PID_RESET.
            let start = match failover {
                Some(at) if self.chance(0.7) => at.saturating_sub(self.rng.random_range(0..=2_000)),
                Some(at) => at + self.rng.random_range(0..=2_000),
                None => self.rng.random_range(1_000..=self.duration_ms / 2),
            }
            .min(self.duration_ms - 1);
            if self.chance(0.8) {
                self.producer(cluster, &topic, Some(start));
            }
            if self.chance(0.3) {
                self.transactional_producer(cluster, &topic, Some(start));
            }
            if self.chance(0.75) {
                let consumer_start = self.chance(0.5).then_some(start);
                self.consumer(cluster, &topic, consumer_start);
            }
        }
        self.draw_resuming_groups(links);
    }

    /// Sometimes a source group whose members resume on the destination after its failover,
    /// from the offsets the mirror's sync copied (KIP-1279's consumer failover; what
    /// `group-resume-no-skip` judges).
    pub(super) fn draw_resuming_groups(&mut self, links: &[Link]) {
        for link in links {
            for topic in &link.topics {
                let Some(failover) = self
                    .failovers
                    .get(&(link.destination, topic.clone()))
                    .copied()
                else {
                    continue;
                };
                if !self.chance(0.4) {
                    continue;
                }
                let group = format!("resume-{}-{topic}", letter(link.source));
                let count = self.rng.random_range(1..=2);
                let isolation = if self.chance(0.5) {
                    IsolationSpec::ReadCommitted
                } else {
                    IsolationSpec::ReadUncommitted
                };
                for (cluster, start_ms) in [
                    (link.source, None),
                    (
                        link.destination,
                        Some(
                            (failover + self.rng.random_range(0..=2_000)).min(self.duration_ms - 1),
                        ),
                    ),
                ] {
                    self.consumers.push(ConsumerSpec {
                        cluster: spanned(letter(cluster)),
                        topic: spanned(topic.clone()),
                        count,
                        isolation,
                        group: Some(group.clone()),
                        start_ms: start_ms.map(spanned),
                    });
                }
            }
        }
    }

    pub(super) fn producer(&mut self, cluster: usize, topic: &str, start_ms: Option<u64>) {
        let acks = if self.chance(0.85) {
            AcksSpec::All
        } else {
            AcksSpec::Leader
        };
        self.producers.push(ProducerSpec {
            cluster: spanned(letter(cluster)),
            topic: spanned(topic.to_owned()),
            count: 1,
            interval_ms: self.rng.random_range(1..=5) * 10,
            acks,
            transactional: false,
            start_ms: start_ms.filter(|at| *at > 0).map(spanned),
            stop_ms: None,
            transaction_timeout_ms: None,
            // Not drawn yet: a draw here would change every generated scenario after it.
            compression: Default::default(),
        });
    }

    pub(super) fn transactional_producer(
        &mut self,
        cluster: usize,
        topic: &str,
        start_ms: Option<u64>,
    ) {
        let interval_ms = self.rng.random_range(3..=8) * 10;
        // A short transaction timeout makes a client pause past it a coordinator's abort.
        let transaction_timeout_ms = self
            .chance(0.3)
            .then(|| self.rng.random_range(15..=40) * 100);
        self.producers.push(ProducerSpec {
            cluster: spanned(letter(cluster)),
            topic: spanned(topic.to_owned()),
            count: 1,
            interval_ms,
            acks: AcksSpec::All,
            transactional: true,
            start_ms: start_ms.filter(|at| *at > 0).map(spanned),
            stop_ms: None,
            transaction_timeout_ms,
            compression: Default::default(),
        });
    }

    pub(super) fn consumer(&mut self, cluster: usize, topic: &str, start_ms: Option<u64>) {
        let isolation = if self.chance(0.4) {
            IsolationSpec::ReadCommitted
        } else {
            IsolationSpec::ReadUncommitted
        };
        let group = self
            .chance(0.4)
            .then(|| format!("g-{}-{topic}", letter(cluster)));
        let count = if group.is_some() && self.chance(0.5) {
            2
        } else {
            1
        };
        self.consumers.push(ConsumerSpec {
            cluster: spanned(letter(cluster)),
            topic: spanned(topic.to_owned()),
            count,
            isolation,
            group,
            start_ms: start_ms.map(spanned),
        });
    }
}
