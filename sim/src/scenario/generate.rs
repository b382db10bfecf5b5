//! `mirrorsim generate`: a complete, valid scenario drawn from a seed, so a soak explores
//! mirroring situations no file scripts (issue #14).
//!
//! Contract: [`generate`] is a pure function of the seed (its own random stream, never
//! madsim's), and what it returns loads: [`generated_toml`] writes it as a scenario file that
//! [`Scenario::parse`] reads back as the same scenario, which `run`, `replay` and `shrink` take
//! unchanged. The generator draws:
//! - a **shape**: one cluster without mirroring, active-passive, failback (one or several
//!   cycles), fan-out, fan-in, a chain of three, or a mixture of two of them over four
//!   clusters; per cluster 1–5 brokers, a `__mirror_state` of 1–6 partitions, a sync interval,
//!   sometimes a flush interval; per topic 1–6 partitions, a replication factor and
//!   `min.insync.replicas` the cluster can hold, sometimes unclean elections and
//!   `mirror.support.unclean.leader.election`;
//! - **workloads** on every cluster: idempotent (acks all or leader) and transactional
//!   producers on the sources, producers and consumers (plain or in a group, either isolation)
//!   on the destinations, some starting while the destination still mirrors (their writes must
//!   be refused and nothing may leak into the mirror), and source groups whose members
//!   resume on the destination after its failover, from the offsets the sync copied;
//! - an **admin timeline** per mirror, a random walk over KIP-1279's operations, legal and
//!   illegal in the state at hand: create, add, pause, resume, remove (also during PREPARING
//!   or PAUSING), describe, delete (also before every partition stopped), create again after a
//!   delete, re-add after STOPPED, a reverse mirror started too early; the outcome of each is
//!   judged by the `admin-outcomes` checker from the seed design's rules;
//! - the **fault plan**: swarm mode over the world's brokers and controllers (its own
//!   one-impaired-broker rule), or scripted leader kills spaced apart, plus pauses and kills of
//!   client nodes;
//! - **aimed episodes**, windows that need two things at once and that independent draws
//!   almost never line up: a *mirror loop* (the source adds its topics to a mirror from its own
//!   destination while the destination still mirrors them, a transactional producer
//!   committing on the source, then removes them again: what the read-only rule on
//!   WriteTxnMarkers is judged by), and a *broker paused across a cut* (a broker of the
//!   cluster whose log an add is about to cut, or of the cluster mirroring it, paused from
//!   before the add until after it: a replica outside the ISR during PREPARING's cut, a
//!   follower that fetched past a mirror fetcher's cut), mostly with an *epoch bump* before it
//!   (a broker of the cluster whose epochs the cut and the paused replica must share killed
//!   for a moment, so their epoch numbers can meet: a follower's divergence check compares
//!   only numbers), and a *destination with a history of its own* (its topics written to from
//!   the start, the first add seconds later with a destination broker paused across it: both
//!   histories at epoch 0, and the first add's cut removes the destination's), and a *re-add
//!   under a next hop* (a chain's first hop, after an epoch bump of its source, removes its
//!   topics and adds them back while the next hop keeps mirroring it, a broker of the next hop
//!   paused across the add: the next hop's mirror fetcher cuts its log under the paused
//!   follower), and a *pause across a source's cut* (a chain's second hop, mirroring a
//!   middle cluster with a history of its own, pauses its topics across that cluster's first
//!   add, whose cut is refilled at the same epoch number: what only a fetcher that re-reads
//!   its tail tells apart). They come from a
//!   stream of their own, so a scenario that draws none is exactly the scenario the other draws
//!   make.

use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use toml::Spanned;

use crate::scenario::{
    AcksSpec, AdminOpKind, AdminOpSpec, ClusterSpec, ConsumerSpec, FaultSpec, IsolationSpec,
    ProducerSpec, Scenario, ScenarioError, ScriptedFault, TopicSpec, FAULT_KINDS,
    RECOVERY_MARGIN_MS,
};

/// The shapes a generated scenario takes, with their weights.
const SHAPES: [(&str, u32); 8] = [
    ("single", 1),
    ("active_passive", 3),
    ("failback", 3),
    ("failback_cycles", 1),
    ("fan_out", 2),
    ("fan_in", 2),
    ("chain", 2),
    ("mixture", 2),
];

/// Topic names the generator uses (none collides with another under Kafka's `.`/`_` rule).
const TOPIC_NAMES: [&str; 6] = ["orders", "payments", "events", "audit", "billing", "clicks"];

/// A scenario drawn from `seed` (see the module doc).
pub fn generate(seed: u64) -> Scenario {
    Draft::new(seed).build()
}

/// [`generate`]'s scenario as a scenario file: a header saying how it was made, then the TOML.
pub fn generated_toml(seed: u64) -> String {
    let scenario = generate(seed);
    let body = scenario
        .to_toml()
        .expect("a generated scenario serialises (plain values only)");
    format!(
        "# Generated by `mirrorsim generate --seed {seed}`: {}.\n# Run it with `mirrorsim run FILE \
         --seed S`; every run of the file is deterministic in S.\n{body}",
        scenario.description
    )
}

/// Loads `text` as the loader would (a generated scenario must always load: an error here is a
/// bug of the generator).
pub fn check_loads(seed: u64, text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(Path::new(&format!("generated-{seed}.toml")), text)
}

/// A mirror between two clusters and the topics it carries.
#[derive(Debug, Clone)]
struct Link {
    source: usize,
    destination: usize,
    mirror: String,
    topics: Vec<String>,
}

/// The scenario being drawn.
struct Draft {
    seed: u64,
    rng: StdRng,
    /// The aimed episodes' own stream (see the module doc).
    aim: StdRng,
    shape: &'static str,
    duration_ms: u64,
    heal_ms: u64,
    clusters: Vec<ClusterSpec>,
    topics: Vec<TopicSpec>,
    producers: Vec<ProducerSpec>,
    consumers: Vec<ConsumerSpec>,
    /// (at, order of drawing, op): sorted by time at the end, keeping the drawn order of
    /// simultaneous operations.
    admin: Vec<(u64, usize, AdminOpSpec)>,
    faults: FaultSpec,
    /// Per destination cluster and topic, when (if ever) it fails over: destination clients
    /// start around then.
    failovers: BTreeMap<(usize, String), u64>,
    /// (cluster, topic) a mirror loop runs on: a transactional producer must write there.
    loops: Vec<(usize, String)>,
    /// (destination cluster, topic) written to before its first add (a destination with a
    /// history of its own): a producer writes there from the start.
    early_writers: Vec<(usize, String)>,
    /// (cluster, topic, from when) a producer must write to: a destination's own writes
    /// between a stop and a re-add.
    writers_from: Vec<(usize, String, u64)>,
    /// (destination cluster, when) of each first add onto a destination with a history of
    /// its own: a next hop mirroring that cluster may pause across the add.
    history_cuts: Vec<(usize, u64)>,
    /// (cluster, start, end) of the aimed episodes' broker faults (a pause across a cut, the
    /// epoch bump before it), which the scripted leader kills and one another keep clear of.
    aimed_broker_faults: Vec<(usize, u64, u64)>,
    notes: Vec<String>,
}

fn spanned<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

fn letter(cluster: usize) -> String {
    ((b'a' + cluster as u8) as char).to_string()
}

impl Draft {
    fn new(seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x6e4e_5ca1_ab1e_0001);
        let aim = StdRng::seed_from_u64(seed ^ 0xa1ed_e915_0de5_0002);
        let duration_ms = rng.random_range(12..=22) * 1_000;
        let heal_ms = rng.random_range(10..=15) * 1_000;
        Self {
            seed,
            rng,
            aim,
            shape: "single",
            duration_ms,
            heal_ms,
            clusters: Vec::new(),
            topics: Vec::new(),
            producers: Vec::new(),
            consumers: Vec::new(),
            admin: Vec::new(),
            faults: FaultSpec::default(),
            failovers: BTreeMap::new(),
            loops: Vec::new(),
            early_writers: Vec::new(),
            writers_from: Vec::new(),
            history_cuts: Vec::new(),
            aimed_broker_faults: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn chance(&mut self, probability: f64) -> bool {
        self.rng.random_bool(probability)
    }

    fn weighted<T: Copy>(&mut self, choices: &[(T, u32)]) -> T {
        let total: u32 = choices.iter().map(|(_, weight)| weight).sum();
        let mut pick = self.rng.random_range(0..total);
        for (choice, weight) in choices {
            if pick < *weight {
                return *choice;
            }
            pick -= weight;
        }
        choices[choices.len() - 1].0
    }

    fn build(mut self) -> Scenario {
        self.shape = self.weighted(&SHAPES);
        let links = self.draw_topology();
        for link in &links {
            self.declare_topics(link);
        }
        if links.is_empty() {
            let topic = TOPIC_NAMES[0].to_owned();
            self.declare_topic(0, &topic, None);
        }
        self.draw_timelines(&links);
        self.draw_workloads(&links);
        self.draw_faults();
        self.finish()
    }

    /// Clusters and the mirrors between them, by shape.
    fn draw_topology(&mut self) -> Vec<Link> {
        let (clusters, pairs): (usize, Vec<(usize, usize)>) = match self.shape {
            "single" => (1, vec![]),
            "active_passive" | "failback" | "failback_cycles" => (2, vec![(0, 1)]),
            "fan_out" => (3, vec![(0, 1), (0, 2)]),
            "fan_in" => (3, vec![(0, 2), (1, 2)]),
            "chain" => (3, vec![(0, 1), (1, 2)]),
            _ => (4, vec![(0, 1), (2, 3)]),
        };
        for _ in 0..clusters {
            let cluster = self.draw_cluster();
            self.clusters.push(cluster);
        }
        let mut next_topic = 0;
        let mut links = Vec::new();
        for (index, (source, destination)) in pairs.into_iter().enumerate() {
            // A chain carries the same topics on (b mirrors a, c mirrors b's mirror topic); the
            // other shapes give each mirror topics of its own.
            let topics = if self.shape == "chain" && index > 0 {
                let previous: &Link = &links[index - 1];
                previous.topics.clone()
            } else {
                let count = if self.chance(0.3) { 2 } else { 1 };
                let topics: Vec<String> = (0..count)
                    .map(|offset| TOPIC_NAMES[(next_topic + offset) % TOPIC_NAMES.len()].to_owned())
                    .collect();
                next_topic += count;
                topics
            };
            links.push(Link {
                source,
                destination,
                mirror: format!("m{}", index + 1),
                topics,
            });
        }
        links
    }

    fn draw_cluster(&mut self) -> ClusterSpec {
        let brokers = self.weighted(&[(1u8, 1), (2, 1), (3, 5), (4, 2), (5, 1)]);
        let flush = self
            .chance(0.25)
            .then(|| self.rng.random_range(2..=20) * 100);
        ClusterSpec {
            brokers,
            broker_session_timeout_ms: 1_000,
            replica_lag_time_max_ms: 1_000,
            log_flush_interval_ms: flush,
            mirror_state_partitions: self.rng.random_range(1..=6),
            mirror_state_replication_factor: None,
            mirror_metadata_refresh_interval_ms: self.rng.random_range(1..=5) * 1_000,
        }
    }

    /// Declares a link's topics on both clusters (a chain's are declared once per cluster).
    fn declare_topics(&mut self, link: &Link) {
        for topic in &link.topics {
            // A mirror topic has the source's partition count on every cluster it reaches.
            let partitions = self
                .topics
                .iter()
                .find(|t| t.name == *topic)
                .map(|t| t.partitions)
                .unwrap_or_else(|| self.weighted(&[(1, 2), (2, 4), (3, 2), (4, 1), (6, 1)]));
            for cluster in [link.source, link.destination] {
                self.declare_topic(cluster, topic, Some(partitions));
            }
        }
    }

    fn declare_topic(&mut self, cluster: usize, name: &str, partitions: Option<i32>) {
        let cluster_letter = letter(cluster);
        if self
            .topics
            .iter()
            .any(|t| t.name == name && *t.cluster.get_ref() == cluster_letter)
        {
            return;
        }
        let brokers = i16::from(self.clusters[cluster].brokers);
        let partitions =
            partitions.unwrap_or_else(|| self.weighted(&[(1, 2), (2, 4), (3, 2), (4, 1), (6, 1)]));
        let replication_factor = brokers.min(self.weighted(&[(1i16, 1), (2, 2), (3, 6)]));
        let min_insync = if replication_factor >= 3 && self.chance(0.8) {
            2
        } else {
            self.rng.random_range(1..=replication_factor.min(2))
        };
        let unclean = self.chance(0.1);
        let mirror_unclean = self.chance(0.2);
        self.topics.push(TopicSpec {
            cluster: spanned(cluster_letter),
            name: name.to_owned(),
            partitions,
            replication_factor,
            min_insync_replicas: min_insync,
            unclean_leader_election: unclean,
            mirror_support_unclean_leader_election: mirror_unclean,
        });
    }

    fn push_admin(&mut self, at_ms: u64, cluster: usize, op: AdminOpKind) -> &mut AdminOpSpec {
        let order = self.admin.len();
        self.admin.push((
            at_ms.min(self.duration_ms - 1),
            order,
            AdminOpSpec {
                at_ms: spanned(0),
                cluster: spanned(letter(cluster)),
                op: spanned(op.name().to_owned()),
                mirror: None,
                topics: Vec::new(),
                partitions: None,
                source: None,
                configs: BTreeMap::new(),
            },
        ));
        &mut self.admin.last_mut().expect("just pushed").2
    }

    fn mirror_op(&mut self, at_ms: u64, link: &Link, op: AdminOpKind, topics: &[String]) {
        let spec = self.push_admin(at_ms, link.destination, op);
        spec.mirror = Some(spanned(link.mirror.clone()));
        spec.topics = topics.iter().cloned().map(spanned).collect();
    }

    fn create_mirror(&mut self, at_ms: u64, link: &Link) {
        let source = letter(link.source);
        let spec = self.push_admin(at_ms, link.destination, AdminOpKind::CreateMirror);
        spec.mirror = Some(spanned(link.mirror.clone()));
        spec.source = Some(spanned(source));
    }

    /// The admin timelines of every link.
    fn draw_timelines(&mut self, links: &[Link]) {
        let duration = self.duration_ms;
        for (index, link) in links.iter().enumerate() {
            let created = self.rng.random_range(0..=300);
            self.create_mirror(created, link);
            let mut added = created + self.rng.random_range(100..=800);
            // A chain's middle cluster with a history of its own is what its next hop's pause
            // across a source's cut needs: drawn more often there.
            let first_of_chain = self.shape == "chain" && index == 0;
            let used_destination = self
                .aim
                .random_bool(if first_of_chain { 0.4 } else { 0.15 });
            if used_destination {
                added = created + self.aim.random_range(2_500..=4_500);
            }
            self.mirror_op(added, link, AdminOpKind::AddTopics, &link.topics);
            // A chain's second hop fails over after the first, the others anywhere in the
            // middle of the fault phase; one in seven mirrors never fails over.
            let earliest = if self.shape == "chain" && index > 0 {
                duration * 11 / 20
            } else {
                duration * 7 / 20
            };
            let failover = (!self.chance(1.0 / 7.0))
                .then(|| self.rng.random_range(earliest..=duration * 13 / 20));
            let walk_until = failover.unwrap_or(duration * 4 / 5);
            // An add on this link cuts the destination's log, and the mirror fetcher of a
            // cluster mirroring the destination (a chain's next hop) then cuts its log too.
            let cut: Vec<usize> = std::iter::once(link.destination)
                .chain(
                    links
                        .iter()
                        .filter(|next| next.source == link.destination)
                        .map(|next| next.destination),
                )
                .collect();
            if used_destination {
                self.used_destination(link, added);
            }
            // The re-add episode keeps the walk's operations before its stop; the walk starts
            // after a pause across the source's cut.
            let readd_from = if cut.len() > 1 {
                self.maybe_readd_under_next_hop(link, added, walk_until, &cut[1..])
            } else {
                None
            };
            let walk_from = self
                .maybe_pause_across_source_cut(link, added, walk_until)
                .unwrap_or(added);
            self.random_walk(link, walk_from, readd_from.unwrap_or(walk_until), &cut);
            let origin = !links.iter().any(|other| other.destination == link.source);
            if origin {
                self.maybe_mirror_loop(index, link, added, walk_until);
            }
            if let Some(at) = failover {
                self.mirror_op(at, link, AdminOpKind::RemoveTopics, &link.topics);
                for topic in &link.topics {
                    self.failovers.insert((link.destination, topic.clone()), at);
                }
                self.after_failover(link, at, &cut);
            }
        }
    }

    /// Aimed episode (module doc): sometimes, while the link still mirrors, its source adds the
    /// topics to a mirror from its own destination (`loopN`), so PREPARING fails on the loop
    /// while the source's transactions commit into partitions that just became read-only; the
    /// topics are removed again before the link fails over, and the loop mirror is sometimes
    /// deleted once they stopped.
    fn maybe_mirror_loop(&mut self, index: usize, link: &Link, added_ms: u64, until_ms: u64) {
        if !self.aim.random_bool(0.15) || until_ms < added_ms + 5_000 {
            return;
        }
        let created = self.aim.random_range(added_ms + 1_000..=until_ms - 4_000);
        let looped = Link {
            source: link.destination,
            destination: link.source,
            mirror: format!("loop{}", index + 1),
            topics: link.topics.clone(),
        };
        self.create_mirror(created, &looped);
        let add = created + self.aim.random_range(100..=400);
        self.mirror_op(add, &looped, AdminOpKind::AddTopics, &looped.topics);
        let remove = (add + self.aim.random_range(1_200..=3_000)).min(until_ms - 300);
        self.mirror_op(remove, &looped, AdminOpKind::RemoveTopics, &looped.topics);
        if self.aim.random_bool(0.5) {
            // Refused while a partition is still STOPPING.
            let delete = remove + self.aim.random_range(800..=3_000);
            self.mirror_op(delete, &looped, AdminOpKind::DeleteMirror, &[]);
        }
        for topic in &link.topics {
            self.loops.push((link.source, topic.clone()));
        }
        self.notes.push(format!("{} loops back", looped.mirror));
    }

    /// Aimed episode (module doc): a link whose destination the `next_hops` mirror (a chain's
    /// first hop) removes its topics while the next hops keep mirroring it, writes to them
    /// (a producer from the stop on), and adds them back, with a broker of its source killed
    /// for a moment around the stop and a broker of a next hop paused from after the
    /// stop until after the re-add. The destination's stop bumps its epoch to the next
    /// number, which its own writes carry; the kill moves the source to that same number a
    /// little later; the re-add cuts the destination's log and re-mirrors the source's, and
    /// the next hop's mirror fetcher meets the divergence and cuts its log in turn while the
    /// paused follower holds the old history, the destination's own writes, at an epoch
    /// number the new history re-uses (generator seed 9400000000000529,
    /// `regressions/follower_paused_across_mirror_cut`: what
    /// `MirrorDesign::fences_followers_after_mirror_cut` is for).
    /// Returns when the episode's stop is, if it was drawn.
    fn maybe_readd_under_next_hop(
        &mut self,
        link: &Link,
        added_ms: u64,
        until_ms: u64,
        next_hops: &[usize],
    ) -> Option<u64> {
        if !self.aim.random_bool(0.5) || until_ms < added_ms + 6_500 {
            return None;
        }
        let removed = self.aim.random_range(added_ms + 2_500..=until_ms - 4_000);
        let hop = next_hops[self.aim.random_range(0..next_hops.len())];
        // The next hop mirrors the stop's MIRROR_PID_RESET and the local writes after it
        // before its broker pauses; the re-add comes once that broker left the ISR.
        let pause_start = removed + self.aim.random_range(1_000..=1_800);
        let readd = pause_start + self.aim.random_range(1_200..=2_000);
        let pause_end = readd + self.aim.random_range(1_500..=3_000);
        // Around the stop: the source's next epoch (its leaders move once the controller
        // fences the killed broker, about a second on) then starts near where the
        // destination's own writes, at its stop's epoch, the same number, began.
        let kill_ms = self.aim.random_range(8..=15) * 100;
        let kill_at = (removed + self.aim.random_range(0..=1_000)).saturating_sub(700);
        let (source_brokers, hop_brokers) = (
            self.clusters[link.source].brokers,
            self.clusters[hop].brokers,
        );
        if hop_brokers < 2
            || source_brokers < 2
            || pause_end + 1_000 >= self.duration_ms
            || !self.aimed_clear(hop, pause_start, pause_end)
            || !self.aimed_clear(link.source, kill_at, kill_at + kill_ms)
        {
            return None;
        }
        self.mirror_op(removed, link, AdminOpKind::RemoveTopics, &link.topics);
        self.mirror_op(readd, link, AdminOpKind::AddTopics, &link.topics);
        for topic in &link.topics {
            self.writers_from
                .push((link.destination, topic.clone(), removed));
        }
        let killed = self.aim.random_range(1..=source_brokers);
        self.aimed_broker_faults
            .push((link.source, kill_at, kill_at + kill_ms));
        self.scripted(
            kill_at,
            "kill",
            &format!("{}-broker-{killed}", letter(link.source)),
            kill_ms,
        );
        let paused = self.aim.random_range(1..=hop_brokers);
        self.aimed_broker_faults.push((hop, pause_start, pause_end));
        self.scripted(
            pause_start,
            "pause",
            &format!("{}-broker-{paused}", letter(hop)),
            pause_end - pause_start,
        );
        self.notes
            .push(format!("{} re-added under {}", link.mirror, letter(hop)));
        Some(removed)
    }

    /// Aimed episode (module doc): the link's destination topics are written to from the
    /// start, the first add comes seconds later (at `added_ms`), and a broker of the
    /// destination is paused across it. The destination's own history and the source's are
    /// both at leader epoch 0, and PREPARING's cut of a first add removes all of it (nothing
    /// was mirrored yet: spec S-24), so a replica outside the ISR holds records of epoch 0 where
    /// the leader re-mirrors the source's records of epoch 0
    /// (`regressions/replica_missed_preparing_cut_same_epoch`, what
    /// `MirrorDesign::prepare_awaits_every_replica_after_cut` is for).
    fn used_destination(&mut self, link: &Link, added_ms: u64) {
        for topic in &link.topics {
            self.early_writers.push((link.destination, topic.clone()));
        }
        self.history_cuts.push((link.destination, added_ms));
        self.notes
            .push(format!("{} adds written topics", link.mirror));
        self.pause_across_cut(&[link.destination], added_ms, None);
    }

    /// Aimed episode (module doc): a link whose source is a destination with a history of its
    /// own (a chain's second hop, mirroring the middle cluster's own records from its start)
    /// sometimes pauses its topics from before the source's first add until after it. That
    /// add's PREPARING finds no last mirrored epoch and cuts the source's log to 0, and its
    /// first fetch refills it with the upstream source's batches, at leader epoch 0 as the
    /// cut records were: once resumed, this link's fetch names epoch 0 and an offset the refill
    /// reaches, so no divergence shows and only a fetcher that re-reads its tail tells the two
    /// histories apart (generated seed 9970000000000596,
    /// `regressions/source_cut_refilled_in_same_epoch_under_paused_mirror`: what
    /// `MirrorDesign::verifies_mirrored_tail` is for). Returns when the topics resume.
    fn maybe_pause_across_source_cut(
        &mut self,
        link: &Link,
        added_ms: u64,
        until_ms: u64,
    ) -> Option<u64> {
        let source_cut = self
            .history_cuts
            .iter()
            .find(|(cluster, _)| *cluster == link.source)
            .map(|(_, at)| *at)?;
        if !self.aim.random_bool(0.6) {
            return None;
        }
        let pause = source_cut.saturating_sub(self.aim.random_range(300..=1_200));
        let resume = source_cut + self.aim.random_range(1_500..=3_500);
        // This link must be mirroring by the pause, and still mirroring at the resume.
        if pause < added_ms + 1_000 || resume + 500 >= until_ms {
            return None;
        }
        self.mirror_op(pause, link, AdminOpKind::PauseTopics, &link.topics);
        self.mirror_op(resume, link, AdminOpKind::ResumeTopics, &link.topics);
        self.notes.push(format!(
            "{} paused across {}'s cut",
            link.mirror,
            letter(link.source)
        ));
        Some(resume)
    }

    /// Aimed episode (module doc): sometimes a broker of one of the `clusters` an add at
    /// `add_ms` cuts is paused from before the add (long enough to leave the ISR) until after
    /// it, unless another aimed broker fault on that cluster is near; and then, mostly, a
    /// broker of `bump_cluster` is killed for a moment between `bump_from_ms` and the pause
    /// ([`Draft::maybe_bump_epochs_before`]).
    fn maybe_pause_across_cut(&mut self, clusters: &[usize], add_ms: u64, bump: (usize, u64)) {
        if self.aim.random_bool(0.5) {
            self.pause_across_cut(clusters, add_ms, Some(bump));
        }
    }

    /// A broker of one of `clusters` paused across the add at `add_ms` (see
    /// [`Draft::maybe_pause_across_cut`]), and mostly the epoch `bump` before it.
    fn pause_across_cut(&mut self, clusters: &[usize], add_ms: u64, bump: Option<(usize, u64)>) {
        if clusters.is_empty() {
            return;
        }
        let cluster = clusters[self.aim.random_range(0..clusters.len())];
        let brokers = self.clusters[cluster].brokers;
        let broker = self.aim.random_range(1..=brokers);
        let start = add_ms.saturating_sub(self.aim.random_range(1_200..=2_500));
        let end = add_ms + self.aim.random_range(300..=2_500);
        if brokers < 2 || end + 1_000 >= self.duration_ms || !self.aimed_clear(cluster, start, end)
        {
            return;
        }
        self.aimed_broker_faults.push((cluster, start, end));
        self.scripted(
            start,
            "pause",
            &format!("{}-broker-{broker}", letter(cluster)),
            end - start,
        );
        if let Some((bump_cluster, bump_from_ms)) = bump {
            if self.aim.random_bool(0.7) {
                self.maybe_bump_epochs_before(bump_cluster, bump_from_ms, (cluster, start), add_ms);
            }
        }
    }

    /// The second half of a pause across a cut: a broker of `cluster` killed (a process crash)
    /// for 0.8–1.5 s from `from_ms` on, ending before the add at `add_ms` (before the
    /// `pause`'s start on its cluster), so the partitions it led move to the next leader epoch
    /// there. The replica outside the ISR keeps its records only where the re-mirrored batch
    /// at its offset carries the epoch number its own last batch has (see
    /// `MirrorDesign::prepare_awaits_every_replica_after_cut` and
    /// `fences_followers_after_mirror_cut`): the destination's stop bumps its epoch to 1, and a
    /// source that never changed leaders mirrors epoch 0, so without a bump of the right
    /// cluster after the records the cut removes, the numbers never meet (generator seed 16:
    /// the paused replica's epoch 0 against b's 1; `regressions/follower_paused_across_mirror_cut`
    /// had a's leader cut off first). On the pause's own cluster the crash ends a second before
    /// the pause begins: a crash loses nothing, and the broker is back in the ISR by then.
    fn maybe_bump_epochs_before(
        &mut self,
        cluster: usize,
        from_ms: u64,
        (pause_cluster, pause_ms): (usize, u64),
        add_ms: u64,
    ) {
        let brokers = self.clusters[cluster].brokers;
        let duration = self.aim.random_range(8..=15) * 100;
        let (until_ms, margin) = if cluster == pause_cluster {
            (pause_ms, 1_000)
        } else {
            (add_ms, 500)
        };
        let latest = until_ms.saturating_sub(duration + margin);
        let earliest = from_ms + 300;
        if brokers < 2 || earliest >= latest {
            return;
        }
        let at = self.aim.random_range(earliest..latest);
        let others_clear = self.aimed_broker_faults.iter().all(|(other, start, end)| {
            *other != cluster
                || (*other == pause_cluster && *start == pause_ms)
                || at + duration + RECOVERY_MARGIN_MS <= *start
                || end + RECOVERY_MARGIN_MS <= at
        });
        if !others_clear {
            return;
        }
        let broker = self.aim.random_range(1..=brokers);
        self.aimed_broker_faults.push((cluster, at, at + duration));
        self.scripted(
            at,
            "kill",
            &format!("{}-broker-{broker}", letter(cluster)),
            duration,
        );
    }

    /// Whether a broker fault on `cluster` from `start` to `end` keeps a recovery margin from
    /// every aimed broker fault there.
    fn aimed_clear(&self, cluster: usize, start: u64, end: u64) -> bool {
        self.aimed_broker_faults.iter().all(|(other, at, until)| {
            *other != cluster
                || end + RECOVERY_MARGIN_MS <= *at
                || until + RECOVERY_MARGIN_MS <= start
        })
    }

    /// Operations between the add and the failover, legal and illegal in the state at hand.
    fn random_walk(&mut self, link: &Link, from_ms: u64, until_ms: u64, cut: &[usize]) {
        let steps = self.rng.random_range(0..=4);
        let mut at = from_ms;
        let mut paused = false;
        for _ in 0..steps {
            at += self.rng.random_range(200..=1_500);
            if at + 200 >= until_ms {
                break;
            }
            let topic = vec![link.topics[self.rng.random_range(0..link.topics.len())].clone()];
            let op = self.weighted(&[
                ("pause", 3),
                ("resume", 2),
                ("describe", 3),
                ("add_again", 1),
                ("remove_early", 1),
                ("delete_early", 1),
            ]);
            match op {
                "pause" => {
                    self.mirror_op(at, link, AdminOpKind::PauseTopics, &topic);
                    paused = true;
                }
                "resume" => {
                    // Illegal when nothing is paused (InvalidClusterMirrorState).
                    self.mirror_op(at, link, AdminOpKind::ResumeTopics, &topic);
                    paused = false;
                }
                "describe" => self.mirror_op(at, link, AdminOpKind::DescribeMirror, &[]),
                // Already mirrored: InvalidClusterMirrorState.
                "add_again" => self.mirror_op(at, link, AdminOpKind::AddTopics, &topic),
                "remove_early" => {
                    // Removing one topic early (while PREPARING, MIRRORING or PAUSING) and
                    // adding it back once it stopped: STOPPED -> PREPARING.
                    self.mirror_op(at, link, AdminOpKind::RemoveTopics, &topic);
                    at += self.rng.random_range(1_000..=2_500);
                    self.mirror_op(at, link, AdminOpKind::AddTopics, &topic);
                    // The re-mirrored batches carry the source's epochs: bump them, before
                    // the remove or after it.
                    let bump = (link.source, from_ms);
                    self.maybe_pause_across_cut(cut, at, bump);
                    paused = false;
                }
                _ => {
                    // Refused: the mirror still has topics that are not removed.
                    self.mirror_op(at, link, AdminOpKind::DeleteMirror, &[]);
                }
            }
        }
        if paused && self.chance(0.6) {
            let resume_at = (at + 300).min(until_ms.saturating_sub(100));
            self.mirror_op(resume_at, link, AdminOpKind::ResumeTopics, &link.topics);
        }
    }

    /// After a failover: perhaps a describe, a delete (sometimes before every partition
    /// stopped) and a re-creation from scratch, and for failbacks the reverse mirrors.
    fn after_failover(&mut self, link: &Link, failover_ms: u64, cut: &[usize]) {
        let duration = self.duration_ms;
        let mut at = failover_ms + self.rng.random_range(300..=2_000);
        if at < duration && self.chance(0.4) {
            self.mirror_op(at, link, AdminOpKind::DescribeMirror, &[]);
        }
        if matches!(self.shape, "failback" | "failback_cycles") {
            let cycles = if self.shape == "failback_cycles" {
                2
            } else {
                1
            };
            let mut forward = link.clone();
            for cycle in 0..cycles {
                let back = Link {
                    source: forward.destination,
                    destination: forward.source,
                    mirror: format!("back{}", cycle + 1),
                    topics: forward.topics.clone(),
                };
                // Sometimes too early: the reverse mirror starts before the forward one
                // stopped, and its partitions fail until it has.
                let start = if self.chance(0.2) {
                    failover_ms.saturating_sub(self.rng.random_range(200..=1_500))
                } else {
                    at + self.rng.random_range(500..=2_500)
                };
                if start + 3_000 >= duration {
                    break;
                }
                self.create_mirror(start, &back);
                let add = start + self.rng.random_range(100..=600);
                self.mirror_op(add, &back, AdminOpKind::AddTopics, &back.topics);
                // The paused replica's own records carry the old primary's epochs: bump them
                // after the forward mirror stopped copying them.
                let bump = (back.destination, failover_ms);
                self.maybe_pause_across_cut(&[back.destination], add, bump);
                let remove = add + self.rng.random_range(2_500..=5_000);
                if remove + 500 >= duration {
                    self.notes.push(format!("{} keeps mirroring", back.mirror));
                    break;
                }
                self.mirror_op(remove, &back, AdminOpKind::RemoveTopics, &back.topics);
                for topic in &back.topics {
                    self.failovers
                        .insert((back.destination, topic.clone()), remove);
                }
                at = remove + self.rng.random_range(500..=1_500);
                forward = back;
            }
            return;
        }
        at += self.rng.random_range(0..=1_500);
        if at + 1_000 < duration && self.chance(0.35) {
            // Right after the failover some partitions may still be STOPPING: then refused.
            self.mirror_op(at, link, AdminOpKind::DeleteMirror, &[]);
            if self.chance(0.5) && at + 3_000 < duration {
                // The name again, from scratch; its topics start over with PREPARING.
                let again = at + self.rng.random_range(1_000..=2_000);
                self.create_mirror(again, link);
                let add = again + self.rng.random_range(100..=500);
                self.mirror_op(add, link, AdminOpKind::AddTopics, &link.topics);
                let bump = (link.source, failover_ms);
                self.maybe_pause_across_cut(cut, add, bump);
                let remove = add + self.rng.random_range(2_000..=4_000);
                if remove < duration {
                    self.mirror_op(remove, link, AdminOpKind::RemoveTopics, &link.topics);
                    for topic in &link.topics {
                        self.failovers
                            .insert((link.destination, topic.clone()), remove);
                    }
                }
            }
        }
    }

    /// Producers and consumers on every cluster.
    fn draw_workloads(&mut self, links: &[Link]) {
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
    fn draw_resuming_groups(&mut self, links: &[Link]) {
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

    fn producer(&mut self, cluster: usize, topic: &str, start_ms: Option<u64>) {
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
            transaction_timeout_ms: None,
        });
    }

    fn transactional_producer(&mut self, cluster: usize, topic: &str, start_ms: Option<u64>) {
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
            transaction_timeout_ms,
        });
    }

    fn consumer(&mut self, cluster: usize, topic: &str, start_ms: Option<u64>) {
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

    /// Swarm mode over the brokers, or scripted leader kills spaced apart; sometimes client
    /// pauses and kills on top.
    fn draw_faults(&mut self) {
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
        } else {
            // One broker of a cluster at a time, each kill well clear of the next (the
            // single-impaired-broker model acks=all promises to survive).
            let topics: Vec<(String, String, i32)> = self
                .topics
                .iter()
                .filter(|t| t.replication_factor >= 2)
                .map(|t| (t.cluster.get_ref().clone(), t.name.clone(), t.partitions))
                .collect();
            let mut next_free: BTreeMap<String, u64> = BTreeMap::new();
            for _ in 0..self.rng.random_range(0..=4) {
                if topics.is_empty() {
                    break;
                }
                let (cluster, topic, partitions) =
                    topics[self.rng.random_range(0..topics.len())].clone();
                let free = next_free.get(&cluster).copied().unwrap_or(500);
                let at = free + self.rng.random_range(0..=2_000);
                if at + 1_000 >= self.duration_ms {
                    continue;
                }
                let duration = self.rng.random_range(5..=15) * 100;
                next_free.insert(cluster.clone(), at + duration + 4_000);
                let partition = self.rng.random_range(0..partitions);
                let index = crate::scenario::cluster_index(&cluster).expect("a letter");
                let near_a_pause = self.aimed_broker_faults.iter().any(|(c, start, end)| {
                    *c == index
                        && at < end + RECOVERY_MARGIN_MS
                        && *start < at + duration + RECOVERY_MARGIN_MS
                });
                if near_a_pause {
                    // One impaired broker per cluster at a time.
                    continue;
                }
                self.scripted(
                    at,
                    "kill",
                    &format!("{cluster}-leader:{topic}:{partition}"),
                    duration,
                );
            }
        }
        self.client_faults();
    }

    /// Pauses and kills of client nodes (a transactional producer paused mid-transaction, a
    /// consumer restarted).
    fn client_faults(&mut self) {
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
            let kind = if self.chance(0.5) { "pause" } else { "kill" };
            let at = self.rng.random_range(1_000..self.duration_ms - 1_000);
            let duration = self.rng.random_range(3..=30) * 100;
            self.scripted(at, kind, &node, duration);
        }
    }

    fn scripted(&mut self, at_ms: u64, kind: &str, node: &str, duration_ms: u64) {
        self.faults.scripted.push(ScriptedFault {
            at_ms,
            kind: spanned(kind.to_owned()),
            nodes: vec![spanned(node.to_owned())],
            other: Vec::new(),
            duration_ms: Some(duration_ms),
            amount: None,
            asymmetric: None,
            lose_unflushed: None,
            probability: None,
            drift_ppm: None,
        });
    }

    fn finish(mut self) -> Scenario {
        self.admin.sort_by_key(|(at, order, _)| (*at, *order));
        let admin = self
            .admin
            .into_iter()
            .map(|(at, _, mut spec)| {
                spec.at_ms = spanned(at);
                spec
            })
            .collect();
        let mut description = format!(
            "generated from seed {}: {} over {} cluster(s)",
            self.seed,
            self.shape.replace('_', "-"),
            self.clusters.len()
        );
        if !self.notes.is_empty() {
            description.push_str(&format!(" ({})", self.notes.join(", ")));
        }
        Scenario {
            name: format!("generated-{}", self.seed),
            description,
            duration_ms: self.duration_ms,
            heal_ms: self.heal_ms,
            clusters: self.clusters,
            topics: self.topics,
            producers: self.producers,
            consumers: self.consumers,
            faults: self.faults,
            admin,
            coverage: Vec::new(),
            broken: Vec::new(),
            design: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generated_scenario_loads_and_reads_back_as_itself() {
        let mut shapes = std::collections::BTreeSet::new();
        for seed in 0..400 {
            let text = generated_toml(seed);
            let loaded =
                check_loads(seed, &text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
            assert_eq!(loaded, generate(seed), "seed {seed}");
            shapes.insert(
                loaded
                    .description
                    .split(' ')
                    .nth(3)
                    .unwrap_or("")
                    .to_owned(),
            );
        }
        assert!(shapes.len() >= 7, "shapes drawn: {shapes:?}");
    }

    #[test]
    fn aimed_episodes_are_drawn_and_line_up_with_what_they_aim_at() {
        let (mut loops, mut pauses, mut bumps, mut used, mut paused_topics) = (0, 0, 0, 0, 0);
        for seed in 0..400 {
            let scenario = generate(seed);
            let adds: Vec<(u64, &str)> = scenario
                .admin
                .iter()
                .filter(|op| op.op.get_ref() == "add_topics")
                .map(|op| (*op.at_ms.get_ref(), op.cluster.get_ref().as_str()))
                .collect();
            for pause in scenario.faults.scripted.iter().filter(|f| {
                f.kind.get_ref() == "pause" && f.nodes[0].get_ref().contains("-broker-")
            }) {
                let end = pause.at_ms + pause.duration_ms();
                assert!(
                    adds.iter()
                        .any(|(at, _)| pause.at_ms + 1_200 <= *at && *at + 300 <= end),
                    "seed {seed}: a broker pause across no add: {pause:?}"
                );
                pauses += 1;
            }
            // Every broker kill is an epoch bump before a pause across a cut, and ends a second
            // before any pause on its own cluster begins (or starts well after it ended).
            for kill in
                scenario.faults.scripted.iter().filter(|f| {
                    f.kind.get_ref() == "kill" && f.nodes[0].get_ref().contains("-broker-")
                })
            {
                let end = kill.at_ms + kill.duration_ms();
                let before_a_paused_add = scenario.faults.scripted.iter().any(|pause| {
                    pause.kind.get_ref() == "pause"
                        && pause.nodes[0].get_ref().contains("-broker-")
                        && adds.iter().any(|(at, _)| {
                            pause.at_ms + 1_200 <= *at
                                && *at + 300 <= pause.at_ms + pause.duration_ms()
                                && end + 500 <= *at
                        })
                });
                assert!(
                    before_a_paused_add,
                    "seed {seed}: a broker kill before no add a pause spans: {kill:?}"
                );
                let cluster = &kill.nodes[0].get_ref()[..1];
                let prefix = format!("{cluster}-broker-");
                let mut pauses_there = scenario.faults.scripted.iter().filter(|f| {
                    f.kind.get_ref() == "pause" && f.nodes[0].get_ref().starts_with(&prefix)
                });
                assert!(
                    pauses_there.all(|pause| end + 1_000 <= pause.at_ms
                        || pause.at_ms + pause.duration_ms() + RECOVERY_MARGIN_MS <= kill.at_ms),
                    "seed {seed}: a broker kill near a pause on {cluster}: {kill:?}"
                );
                bumps += 1;
            }
            if scenario.description.contains("adds written topics") {
                // A destination topic written to from the start, added seconds later.
                let written_then_added = scenario.producers.iter().any(|producer| {
                    producer.start_ms.is_none()
                        && scenario.admin.iter().any(|op| {
                            op.op.get_ref() == "add_topics"
                                && op.cluster.get_ref() == producer.cluster.get_ref()
                                && *op.at_ms.get_ref() >= 2_500
                                && op
                                    .topics
                                    .iter()
                                    .any(|t| t.get_ref() == producer.topic.get_ref())
                        })
                });
                assert!(written_then_added, "seed {seed}: no early writer");
                used += 1;
            }
            if scenario.description.contains("'s cut") {
                // The next hop's topics pause before the written-to cluster's first add and
                // resume after it.
                let m2_at = |kind: &str| -> Vec<u64> {
                    scenario
                        .admin
                        .iter()
                        .filter(|op| {
                            op.op.get_ref() == kind
                                && op.mirror.as_ref().is_some_and(|m| m.get_ref() == "m2")
                        })
                        .map(|op| *op.at_ms.get_ref())
                        .collect()
                };
                let (pauses, resumes) = (m2_at("pause_topics"), m2_at("resume_topics"));
                let paused_across = scenario.admin.iter().any(|op| {
                    let at = *op.at_ms.get_ref();
                    op.op.get_ref() == "add_topics"
                        && op.cluster.get_ref() == "b"
                        && at >= 2_500
                        && pauses.iter().any(|p| *p + 300 <= at)
                        && resumes.iter().any(|r| at + 1_500 <= *r)
                });
                assert!(
                    paused_across,
                    "seed {seed}: no pause of m2 across b's first add"
                );
                paused_topics += 1;
            }
            for op in scenario.admin.iter().filter(|op| {
                op.op.get_ref() == "add_topics"
                    && op
                        .mirror
                        .as_ref()
                        .is_some_and(|m| m.get_ref().starts_with("loop"))
            }) {
                let cluster = op.cluster.get_ref();
                for topic in &op.topics {
                    assert!(
                        scenario.producers.iter().any(|p| p.transactional
                            && p.cluster.get_ref() == cluster
                            && p.topic.get_ref() == topic.get_ref()),
                        "seed {seed}: loop on {cluster} {} without a transaction",
                        topic.get_ref()
                    );
                }
                // The loop is undone again: its topics are removed after the add.
                let loop_name = op.mirror.as_ref().expect("filtered on").get_ref();
                assert!(
                    scenario
                        .admin
                        .iter()
                        .any(|other| other.op.get_ref() == "remove_topics"
                            && other
                                .mirror
                                .as_ref()
                                .is_some_and(|m| m.get_ref() == loop_name)
                            && other.at_ms.get_ref() > op.at_ms.get_ref()),
                    "seed {seed}: {loop_name} is never removed"
                );
                loops += 1;
            }
        }
        assert!(
            loops >= 20 && pauses >= 20 && bumps >= 10 && used >= 20 && paused_topics >= 3,
            "{loops} loops, {pauses} pauses across a cut, {bumps} epoch bumps, \
             {used} destinations with a history, {paused_topics} pauses across a source's cut"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_scenario_and_others_differ() {
        assert_eq!(generated_toml(7), generated_toml(7));
        assert_ne!(generated_toml(7), generated_toml(8));
    }
}
