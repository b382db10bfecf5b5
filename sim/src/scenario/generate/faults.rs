//! The generated faults: the swarm's kinds and rates, client faults, and scripted faults.

use super::*;
use crate::scenario::HoldBackFault;

impl Draft {
    /// Swarm mode over the brokers, or scripted leader kills spaced apart; sometimes client
    /// pauses and kills on top.
    pub(super) fn draw_faults(&mut self) {
        if self.chance(0.75) {
            self.faults.swarm = true;
            if self.chance(0.4) {
                let kinds: Vec<&str> = FAULT_KINDS
                    .iter()
                    .copied()
                    .filter(|_| self.rng.random_bool(0.5))
                    .collect();
                self.faults.swarm_kinds =
                    kinds.into_iter().map(|k| spanned(k.to_owned())).collect();
            }
            // Half the swarms impair up to two brokers of a cluster at once, power losses
            // included, which eligible leader replicas (KIP-966, the default) survive.
            if self.impairment.random_bool(0.5) {
                self.faults.swarm_impaired_brokers = Some(spanned(2));
                self.notes.push("two brokers impaired at once".to_owned());
            }
        } else {
            // One broker of a cluster at a time, each kill well clear of the next (the
            // single-impaired-broker model acks=all promises to survive).
            let topics: Vec<(String, String, i32, i16)> = self
                .topics
                .iter()
                .filter(|t| t.replication_factor >= 2)
                .map(|t| {
                    let cluster = t.cluster.get_ref().clone();
                    (cluster, t.name.clone(), t.partitions, t.replication_factor)
                })
                .collect();
            let mut next_free: BTreeMap<String, u64> = BTreeMap::new();
            for _ in 0..self.rng.random_range(0..=4) {
                if topics.is_empty() {
                    break;
                }
                let (cluster, topic, partitions, replicas) =
                    topics[self.rng.random_range(0..topics.len())].clone();
                let free = next_free.get(&cluster).copied().unwrap_or(500);
                let at = free + self.rng.random_range(0..=2_000);
                if at + 1_000 >= self.duration_ms {
                    continue;
                }
                let duration = self.rng.random_range(5..=15) * 100;
                // KIP-101's first scenario (issue #18): the next replica in line crashes
                // 100–400 ms after the leader, so the controller may elect it dead and the third
                // replica follows it before it leads. Process crashes lose nothing acknowledged
                // (the page cache survives), which Kafka's design survives with leader epochs.
                let gap = self.double_crash_gap(replicas >= 3);
                let down_until = at + gap.unwrap_or(0) + duration;
                next_free.insert(cluster.clone(), down_until + 4_000);
                let partition = self.rng.random_range(0..partitions);
                let index = crate::scenario::cluster_index(&cluster).expect("a letter");
                let near_a_pause = self.aimed_broker_faults.iter().any(|(c, start, end)| {
                    *c == index
                        && at < end + RECOVERY_MARGIN_MS
                        && *start < down_until + RECOVERY_MARGIN_MS
                });
                if near_a_pause {
                    // One impaired broker per cluster at a time.
                    continue;
                }
                self.kill(
                    at,
                    &format!("{cluster}-leader:{topic}:{partition}"),
                    duration,
                );
                if let Some(gap) = gap {
                    self.kill(
                        at + gap,
                        &format!("{cluster}-follower:{topic}:{partition}"),
                        duration,
                    );
                    self.notes.push(format!(
                        "{cluster}'s leader of {topic}-{partition} and the next in line crash together"
                    ));
                }
            }
        }
        self.client_faults();
    }

    /// How long after a scripted leader kill the next replica in line is killed too, for one
    /// kill in three of a partition with at least three replicas (`eligible`); drawn from the
    /// episode's own stream, so the other draws stay what they were.
    fn double_crash_gap(&mut self, eligible: bool) -> Option<u64> {
        let drawn = self.double_crash.random_bool(1.0 / 3.0);
        let gap = self.double_crash.random_range(1..=4) * 100;
        (eligible && drawn).then_some(gap)
    }

    /// Pauses and kills of client nodes (a transactional producer paused mid-transaction, a
    /// consumer restarted).
    pub(super) fn client_faults(&mut self) {
        let mut clients: Vec<String> = Vec::new();
        let mut counts: BTreeMap<(String, &str), u32> = BTreeMap::new();
        for producer in &self.producers {
            let entry = counts
                .entry((producer.cluster.get_ref().clone(), "producer"))
                .or_insert(0);
            *entry += 1;
            if producer.start_ms.is_none() {
                clients.push(format!("{}-producer-{entry}", producer.cluster.get_ref()));
            }
        }
        for consumer in &self.consumers {
            let entry = counts
                .entry((consumer.cluster.get_ref().clone(), "consumer"))
                .or_insert(0);
            for _ in 0..consumer.count {
                *entry += 1;
                if consumer.start_ms.is_none() {
                    clients.push(format!("{}-consumer-{entry}", consumer.cluster.get_ref()));
                }
            }
        }
        if clients.is_empty() || !self.chance(0.35) {
            return;
        }
        for _ in 0..self.rng.random_range(1..=2) {
            let node = clients[self.rng.random_range(0..clients.len())].clone();
            let pause = self.chance(0.5);
            let at = self.rng.random_range(1_000..self.duration_ms - 1_000);
            let duration = self.rng.random_range(3..=30) * 100;
            if pause {
                self.pause(at, &node, duration);
            } else {
                self.kill(at, &node, duration);
            }
        }
    }

    /// One scenario in four with a transactional producer holds that producer's messages back
    /// for longer than its request timeout (1 s) now and then (description note "a
    /// transactional producer's requests delayed"): it gives up on the connection and retries
    /// on a new one, and the held request arrives later, possibly while its next transaction
    /// is open — the delayed EndTxn and produce of KIP-890 (issue #18). Drawn from its own
    /// stream, after every other fault, so a scenario that draws none is what it was.
    pub(super) fn maybe_delay_transactional_requests(&mut self) {
        let mut names: Vec<String> = Vec::new();
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for producer in &self.producers {
            let cluster = producer.cluster.get_ref().clone();
            for _ in 0..producer.count {
                let entry = counts.entry(cluster.clone()).or_insert(0);
                *entry += 1;
                if producer.transactional && producer.start_ms.is_none() {
                    names.push(format!("{cluster}-producer-{entry}"));
                }
            }
        }
        if names.is_empty() || !self.delay.random_bool(0.25) || self.duration_ms < 6_000 {
            return;
        }
        let node = names[self.delay.random_range(0..names.len())].clone();
        let at_ms = self.delay.random_range(1_000..self.duration_ms - 4_000);
        let duration_ms =
            (self.delay.random_range(2..=8) * 1_000).min(self.duration_ms - at_ms - 1_000);
        let hold_ms = self.delay.random_range(15..=40) * 100;
        let probability = self.delay.random_range(10..=30) as f64 / 100.0;
        self.faults
            .scripted
            .push(ScriptedFault::HoldBack(HoldBackFault {
                at_ms,
                nodes: vec![spanned(node)],
                duration_ms: Some(duration_ms),
                hold_ms,
                probability: Some(probability),
            }));
        self.notes
            .push("a transactional producer's requests delayed".to_owned());
    }

    /// A scripted kill (a crash, not a power loss) of `node`.
    pub(super) fn kill(&mut self, at_ms: u64, node: &str, duration_ms: u64) {
        self.faults.scripted.push(ScriptedFault::Kill(KillFault {
            at_ms,
            nodes: vec![spanned(node.to_owned())],
            duration_ms: Some(duration_ms),
            lose_unflushed: false,
        }));
    }

    /// A scripted pause of `node`.
    pub(super) fn pause(&mut self, at_ms: u64, node: &str, duration_ms: u64) {
        self.faults.scripted.push(ScriptedFault::Pause(NodeFault {
            at_ms,
            nodes: vec![spanned(node.to_owned())],
            duration_ms: Some(duration_ms),
        }));
    }
}
