//! The generated faults: the swarm's kinds and rates, client faults, and scripted faults.

use super::*;
use crate::scenario::{AcksSpec, HoldBackFault};

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
        let names: Vec<String> = self
            .producer_nodes()
            .into_iter()
            .filter(|(_, producer)| producer.transactional && producer.start_ms.is_none())
            .map(|(node, _)| node)
            .collect();
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

    /// KAFKA-7128's sequence (issue #18) on one partition, for one scenario in two without a
    /// swarm that has a topic with three replicas, min ISR 2 and an acks=all producer on it
    /// (description note "a slow replica rejoins at a new leader's stale high watermark"). The
    /// cluster's followers fetch a batch at a time (`replica_fetch_max_bytes = 1`). The topic's
    /// producers are paused while the third replica in assignment order is paused out of the
    /// ISR, so it is only a few batches behind when they resume and, a moment later, the
    /// leader dies: the second replica leads with the high watermark it had as a follower, a
    /// batch or so below its log end. The third replica comes back slow (its requests held),
    /// catching up a batch per held request; at a drawn number of those the second's answers
    /// to it stop arriving, and the second dies soon after. Where the third replica's fetch at
    /// the stale high watermark is what reached the leader last, `pre-kafka-7128` adds it to
    /// the ISR and elects it without the acknowledged records above it; the default keeps it
    /// out. Drawn from its own stream, after every other fault, so a scenario that draws none
    /// is what it was; the cluster's scripted broker faults near its window are dropped (one
    /// impaired broker at a time is what the other faults keep to), and a cluster another
    /// episode aims at meanwhile draws none.
    pub(super) fn maybe_rejoin_at_stale_high_watermark(&mut self) {
        const SPAN_MS: u64 = 11_000;
        let drawn = self.rejoin.random_bool(0.5);
        if !drawn || self.faults.swarm || self.duration_ms < SPAN_MS + 1_500 {
            return;
        }
        let Some((cluster, topic, partitions, producers)) = self.rejoin_candidate() else {
            return;
        };
        let partition = self.rejoin.random_range(0..partitions);
        let t0 = self
            .rejoin
            .random_range(500..=self.duration_ms - SPAN_MS - 1_000);
        let index = crate::scenario::cluster_index(&cluster).expect("a letter");
        if !self.aimed_clear(index, t0, t0 + SPAN_MS) {
            return;
        }
        self.drop_broker_faults_near(&cluster, t0, t0 + SPAN_MS);
        // The producers resume once the third replica has left the ISR (its lag is checked
        // every 500 ms), and write for a moment before the leader dies, so that the second
        // replica's high watermark lags the last acknowledged batch.
        let resume = t0 + 1_800;
        let leader_dies = resume + self.rejoin.random_range(3..=9) * 100;
        let hold_ms = self.rejoin.random_range(3..=5) * 100;
        // The second replica leads about a session timeout after the kill; the third replica's
        // first held fetch reaches it one hold later, each further batch one hold after that.
        let holds = self.rejoin.random_range(1..=8);
        let cut_at = leader_dies + 1_100 + holds * hold_ms + self.rejoin.random_range(0..hold_ms);
        self.clusters[index].replica_fetch_max_bytes = Some(1);
        let replica = |n: u32| format!("{cluster}-replica:{topic}:{partition}:{n}");
        for producer in &producers {
            self.pause(t0, producer, resume - t0);
        }
        self.pause(t0 + 200, &replica(3), leader_dies + 200 - (t0 + 200));
        self.kill(leader_dies, &replica(1), t0 + SPAN_MS - leader_dies);
        self.faults
            .scripted
            .push(ScriptedFault::HoldBack(HoldBackFault {
                at_ms: leader_dies + 200,
                nodes: vec![spanned(replica(3))],
                duration_ms: Some(t0 + SPAN_MS - leader_dies - 200),
                hold_ms,
                probability: Some(1.0),
            }));
        self.faults
            .scripted
            .push(ScriptedFault::Partition(PartitionFault {
                at_ms: cut_at,
                nodes: vec![spanned(replica(2))],
                other: vec![spanned(replica(3))],
                duration_ms: Some(2_500),
                asymmetric: true,
            }));
        self.kill(cut_at + hold_ms + 250, &replica(2), 3_000);
        self.aimed_broker_faults.push((index, t0, t0 + SPAN_MS));
        self.notes
            .push("a slow replica rejoins at a new leader's stale high watermark".to_owned());
    }

    /// A topic for [`Draft::maybe_rejoin_at_stale_high_watermark`]: (cluster, topic, partition
    /// count, the nodes of its acks=all producers on the cluster), drawn from the episode's
    /// stream among those with three replicas, min ISR 2 and no unclean elections.
    fn rejoin_candidate(&mut self) -> Option<(String, String, i32, Vec<String>)> {
        let mut writers: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for (node, producer) in self.producer_nodes() {
            let plain = producer.acks == AcksSpec::All && !producer.transactional;
            if plain && producer.start_ms.is_none() && producer.stop_ms.is_none() {
                let key = (
                    producer.cluster.get_ref().clone(),
                    producer.topic.get_ref().clone(),
                );
                writers.entry(key).or_default().push(node);
            }
        }
        let candidates: Vec<(String, String, i32, Vec<String>)> = self
            .topics
            .iter()
            .filter(|t| {
                t.replication_factor >= 3
                    && t.min_insync_replicas >= 2
                    && !t.unclean_leader_election
                    && !t.deferred
            })
            .filter_map(|t| {
                let cluster = t.cluster.get_ref().clone();
                let nodes = writers.get(&(cluster.clone(), t.name.clone()))?.clone();
                Some((cluster, t.name.clone(), t.partitions, nodes))
            })
            .collect();
        if candidates.is_empty() {
            return None;
        }
        Some(candidates[self.rejoin.random_range(0..candidates.len())].clone())
    }

    /// Drops the scripted faults of `cluster`'s brokers and controller that come within a
    /// recovery margin of `[from_ms, to_ms]`.
    fn drop_broker_faults_near(&mut self, cluster: &str, from_ms: u64, to_ms: u64) {
        let prefix = format!("{cluster}-");
        self.faults.scripted.retain(|fault| {
            let start = fault.at_ms();
            let end = start + fault.duration_ms();
            let near = start < to_ms + RECOVERY_MARGIN_MS && from_ms < end + RECOVERY_MARGIN_MS;
            let on_brokers = fault.nodes().iter().any(|node| {
                let name = node.get_ref();
                name.starts_with(&prefix)
                    && !name.contains("-producer-")
                    && !name.contains("-consumer-")
            });
            !(near && on_brokers)
        });
    }

    /// Every producer node with the workload entry it runs, named as the runner names them:
    /// `x-producer-N`, numbered per cluster across the entries in file order, `count` each.
    fn producer_nodes(&self) -> Vec<(String, &ProducerSpec)> {
        let mut numbers: BTreeMap<&str, u32> = BTreeMap::new();
        let mut nodes = Vec::new();
        for producer in &self.producers {
            let cluster = producer.cluster.get_ref().as_str();
            for _ in 0..producer.count {
                let number = numbers.entry(cluster).or_insert(0);
                *number += 1;
                nodes.push((format!("{cluster}-producer-{number}"), producer));
            }
        }
        nodes
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
