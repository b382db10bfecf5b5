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
//!   impaired-broker rule: one per cluster, or for half the swarms two, KIP-966's
//!   `swarm_impaired_brokers = 2`), or scripted leader kills spaced apart (one in three a double
//!   crash: the next replica in line 100–400 ms after the leader, KIP-101's first scenario),
//!   plus pauses and kills of client nodes;
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
//!   make;
//! - **source-side episodes** (issue #17), each from a stream of its own as well: a *source
//!   outage* (one scenario in eight: short failure settings on the first link's mirror, its
//!   whole source cut off for longer than them, `recover_topics` after) and a *source growth*
//!   (one origin link in ten: `create_partitions` of one of its topics on the source cluster,
//!   one or two partitions more, while the mirror runs) and a *source unclean election* (one
//!   origin link in seven: a follower of a source partition paused out of the ISR, its leader
//!   killed while it is, the topic allowing unclean elections: the source loses records the
//!   mirror served, spec §4.7); and, on any link, a *bootstrap move* (one link in six: an
//!   `alter_mirror` points the mirror's `bootstrap.servers` at a subset of the source's
//!   brokers while it runs, so every destination broker drops and remakes its connection);
//!   and, on a failover, a *planned failover* (one failover in four: the source's producers of
//!   the topic stop 2.5 s before it and the destination describes its mirror 0.7 s before it,
//!   what `stop-keeps-caught-up` judges); *source changes* (one origin link in five: topic
//!   configs set and ACLs created and deleted on the source, sometimes a topic created there
//!   that the mirror adopts) and, on any link, an *exclusion* (one link in eight: an
//!   `alter_mirror` excludes one of the mirror's topics, which its sync then removes) and a
//!   *source deletion* (one origin link in eight: `delete_topics` of one of its topics on the
//!   source cluster while the mirror runs, half the time created again 1.5–4 s later) and a
//!   *source denial* (one origin link in eight: the source runs an authorizer, every mirror
//!   reading from it authenticates as itself and is granted Read on every topic, and the
//!   source's operator denies the link's mirror Read on one of its topics for 1–4 s).

mod episodes;
mod faults;
mod workload;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use toml::Spanned;

use crate::scenario::{
    AcksSpec, AclSpec, AclsOp, AddTopicsOp, AdminOpSpec, AlterMirrorOp, ClusterSpec,
    CompressionSpec, ConsumerSpec, CreateMirrorOp, CreatePartitionsOp, FaultSpec, IsolationSpec,
    KillFault, MirrorOp, MirrorTopicsOp, NodeFault, PartitionFault, ProducerSpec, Scenario,
    ScenarioError, ScriptedFault, TopicConfigsOp, TopicSpec, TopicsOp, FAULT_KINDS,
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
    /// The producers' compression codecs' own stream, drawn last, so a scenario that draws
    /// none is exactly the scenario it was before codecs were drawn.
    codecs: StdRng,
    /// The source outage episode's own stream (see [`Draft::maybe_source_outage`]), so a
    /// scenario that draws none is exactly the scenario it was before outages were drawn.
    outage: StdRng,
    /// Whether a source outage was drawn already (one per scenario).
    outage_drawn: bool,
    /// The source growth episode's own stream (see [`Draft::maybe_source_growth`]).
    growth: StdRng,
    /// (source cluster, topic) pairs grown already: a topic grows once, from one link.
    grown: BTreeSet<(usize, String)>,
    /// The source unclean election episode's own stream (see
    /// [`Draft::maybe_source_unclean_election`]).
    unclean: StdRng,
    /// The bootstrap move episode's own stream (see [`Draft::maybe_bootstrap_move`]).
    bootstrap: StdRng,
    /// The planned failover episode's own stream (see [`Draft::draw_planned_failovers`]).
    planned: StdRng,
    /// The source changes episode's own stream (see [`Draft::maybe_source_changes`]).
    changes: StdRng,
    /// The exclusion episode's own stream (see [`Draft::maybe_exclusion`]).
    exclusion: StdRng,
    /// The source deletion episode's own stream (see [`Draft::maybe_source_deletion`]).
    deletion: StdRng,
    /// The source denial episode's own stream (see [`Draft::maybe_source_denial`]).
    /// The double crash's own stream (see [`Draft::draw_faults`]): one scripted leader kill
    /// in three takes the next replica in line down with it.
    double_crash: StdRng,
    /// Whether the swarm may impair two brokers of a cluster at once (KIP-966, issue #18): its
    /// own stream, so the other draws stay what they were.
    impairment: StdRng,
    /// The delayed transactional requests episode's own stream (see
    /// [`Draft::maybe_delay_transactional_requests`]).
    delay: StdRng,
    /// KAFKA-7128's episode's own stream ([`Draft::maybe_rejoin_at_stale_high_watermark`]).
    rejoin: StdRng,
    authorization: StdRng,
    /// Each denial episode's source cluster and the orders of its deny's `create_acls` and
    /// `delete_acls` in `admin` (see [`Draft::grant_mirrors_their_sources`]).
    denials: Vec<(usize, [usize; 2])>,
    /// Topics a source's `create_topics` creates mid-run, with the producer that writes to
    /// each: added when the scenario is finished, after every other draw, so that no other
    /// draw (workload, faults, codecs) sees them.
    deferred: Vec<(TopicSpec, ProducerSpec)>,
    shape: &'static str,
    duration_ms: u64,
    heal_ms: u64,
    clusters: Vec<ClusterSpec>,
    topics: Vec<TopicSpec>,
    producers: Vec<ProducerSpec>,
    consumers: Vec<ConsumerSpec>,
    /// (order of drawing, op): sorted by time at the end, keeping the drawn order of
    /// simultaneous operations.
    admin: Vec<(usize, AdminOpSpec)>,
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
        let codecs = StdRng::seed_from_u64(seed ^ 0xc0de_c5c0_de5c_0003);
        let outage = StdRng::seed_from_u64(seed ^ 0x0a7a_9e50_0bce_0004);
        let growth = StdRng::seed_from_u64(seed ^ 0x9e0e_5c0a_1e00_0005);
        let unclean = StdRng::seed_from_u64(seed ^ 0x0c1e_a4e1_ec70_0006);
        let bootstrap = StdRng::seed_from_u64(seed ^ 0xb007_5e7e_c0de_0007);
        let planned = StdRng::seed_from_u64(seed ^ 0x91a2_ed0f_a170_0008);
        let changes = StdRng::seed_from_u64(seed ^ 0x5c0e_c4a9_e500_0009);
        let exclusion = StdRng::seed_from_u64(seed ^ 0xe8c1_0de0_7091_000a);
        let deletion = StdRng::seed_from_u64(seed ^ 0xde1e_7e70_9c5e_000b);
        let authorization = StdRng::seed_from_u64(seed ^ 0xac1a_c1a0_7e57_000c);
        let double_crash = StdRng::seed_from_u64(seed ^ 0xd0b1_ec7a_54e5_000d);
        let impairment = StdRng::seed_from_u64(seed ^ 0x1e1d_7a0b_2b40_000e);
        let delay = StdRng::seed_from_u64(seed ^ 0xde1a_7ed0_e17d_000f);
        let rejoin = StdRng::seed_from_u64(seed ^ 0x4e70_1a7e_0c0d_0010);
        let duration_ms = rng.random_range(12..=22) * 1_000;
        let heal_ms = rng.random_range(10..=15) * 1_000;
        Self {
            seed,
            rng,
            aim,
            codecs,
            outage,
            outage_drawn: false,
            growth,
            grown: BTreeSet::new(),
            unclean,
            bootstrap,
            planned,
            changes,
            exclusion,
            deletion,
            authorization,
            double_crash,
            impairment,
            delay,
            rejoin,
            denials: Vec::new(),
            deferred: Vec::new(),
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
        self.draw_planned_failovers(&links);
        self.draw_faults();
        self.maybe_delay_transactional_requests();
        self.maybe_rejoin_at_stale_high_watermark();
        self.draw_codecs();
        self.grant_mirrors_their_sources();
        self.finish()
    }

    /// One scenario in three has compressing producers: each draws gzip, snappy, lz4, zstd or
    /// none (description note "compressed"). Mirrors then carry compressed batches byte for byte
    /// through every fault the scenario has.
    fn draw_codecs(&mut self) {
        const CODECS: [CompressionSpec; 5] = [
            CompressionSpec::Gzip,
            CompressionSpec::Snappy,
            CompressionSpec::Lz4,
            CompressionSpec::Zstd,
            CompressionSpec::None,
        ];
        if self.producers.is_empty() || !self.codecs.random_bool(1.0 / 3.0) {
            return;
        }
        for producer in &mut self.producers {
            producer.compression = CODECS[self.codecs.random_range(0..CODECS.len())];
        }
        if self
            .producers
            .iter()
            .any(|producer| producer.compression != CompressionSpec::None)
        {
            self.notes.push("compressed".to_owned());
        }
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
            replica_fetch_max_bytes: None,
            log_flush_interval_ms: flush,
            mirror_state_partitions: self.rng.random_range(1..=6),
            mirror_state_replication_factor: None,
            mirror_metadata_refresh_interval_ms: self.rng.random_range(1..=5) * 1_000,
            authorizer: false,
            allow_everyone_if_no_acl_found: None,
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
            deferred: false,
        });
    }

    /// Adds an operation on the link's mirror, built by `op` from its time (clamped into the
    /// fault phase), the destination cluster's letter and the mirror's name.
    fn push_admin(
        &mut self,
        at_ms: u64,
        link: &Link,
        op: impl FnOnce(u64, Spanned<String>, Spanned<String>) -> AdminOpSpec,
    ) {
        let order = self.admin.len();
        let at_ms = at_ms.min(self.duration_ms - 1);
        let spec = op(
            at_ms,
            spanned(letter(link.destination)),
            spanned(link.mirror.clone()),
        );
        self.admin.push((order, spec));
    }

    /// AlterMirrorTopics on the link's mirror (`op` is the operation, e.g.
    /// [`AddTopicsOp::of`]).
    fn topics_op(
        &mut self,
        at_ms: u64,
        link: &Link,
        op: fn(MirrorTopicsOp) -> AdminOpSpec,
        topics: &[String],
    ) {
        self.push_admin(at_ms, link, |at_ms, cluster, mirror| {
            op(MirrorTopicsOp {
                at_ms,
                cluster,
                mirror,
                topics: topics.iter().cloned().map(spanned).collect(),
            })
        });
    }

    /// DeleteMirror or DescribeMirror (`op`) of the link's mirror.
    fn mirror_op(&mut self, at_ms: u64, link: &Link, op: fn(MirrorOp) -> AdminOpSpec) {
        self.push_admin(at_ms, link, |at_ms, cluster, mirror| {
            op(MirrorOp {
                at_ms,
                cluster,
                mirror,
            })
        });
    }

    fn create_mirror(&mut self, at_ms: u64, link: &Link, configs: BTreeMap<String, String>) {
        self.push_admin(at_ms, link, |at_ms, cluster, mirror| {
            AdminOpSpec::CreateMirror(CreateMirrorOp {
                at_ms,
                cluster,
                mirror,
                source: spanned(letter(link.source)),
                configs,
            })
        });
    }

    /// The admin timelines of every link.
    fn draw_timelines(&mut self, links: &[Link]) {
        let duration = self.duration_ms;
        for (index, link) in links.iter().enumerate() {
            let created = self.rng.random_range(0..=300);
            let outage = self.maybe_source_outage();
            let configs = outage
                .as_ref()
                .map(|outage| outage.configs.clone())
                .unwrap_or_default();
            self.create_mirror(created, link, configs);
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
            self.topics_op(added, link, AddTopicsOp::of, &link.topics);
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
            self.maybe_bootstrap_move(link, added, walk_until);
            self.maybe_exclusion(link, added, walk_until);
            let origin = !links.iter().any(|other| other.destination == link.source);
            if origin {
                self.maybe_mirror_loop(index, link, added, walk_until);
                self.maybe_source_growth(link, added, walk_until);
                self.maybe_source_unclean_election(link, added, walk_until);
                self.maybe_source_changes(link, added, walk_until);
                self.maybe_source_deletion(link, added, walk_until);
                self.maybe_source_denial(link, added, walk_until);
            }
            if let Some(at) = failover {
                self.topics_op(at, link, AdminOpSpec::RemoveTopics, &link.topics);
                for topic in &link.topics {
                    self.failovers.insert((link.destination, topic.clone()), at);
                }
                self.after_failover(link, at, &cut);
            }
            if let Some(outage) = outage {
                self.source_outage(link, added, outage);
            }
        }
    }

    fn finish(mut self) -> Scenario {
        for (topic, producer) in std::mem::take(&mut self.deferred) {
            self.topics.push(topic);
            self.producers.push(producer);
        }
        self.admin
            .sort_by_key(|(order, spec)| (spec.at_ms(), *order));
        let admin = self.admin.into_iter().map(|(_, spec)| spec).collect();
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
    use crate::scenario::AdminOpKind;

    #[test]
    fn about_one_scenario_in_three_has_compressing_producers_and_says_so() {
        let mut compressed = 0;
        let mut codecs = std::collections::BTreeSet::new();
        for seed in 0..300 {
            let scenario = generate(seed);
            let drawn: Vec<_> = scenario
                .producers
                .iter()
                .map(|producer| producer.compression)
                .filter(|codec| *codec != CompressionSpec::None)
                .collect();
            assert_eq!(
                !drawn.is_empty(),
                scenario.description.contains("compressed"),
                "seed {seed}: {}",
                scenario.description
            );
            compressed += usize::from(!drawn.is_empty());
            codecs.extend(drawn.into_iter().map(|codec| format!("{codec:?}")));
        }
        assert!((60..=130).contains(&compressed), "{compressed} of 300");
        assert_eq!(codecs.len(), 4, "every codec drawn: {codecs:?}");
    }

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
                .filter(|op| op.kind() == AdminOpKind::AddTopics)
                .map(|op| (op.at_ms(), op.cluster().get_ref().as_str()))
                .collect();
            for pause in scenario
                .faults
                .scripted
                .iter()
                .filter(|f| f.kind() == "pause" && f.nodes()[0].get_ref().contains("-broker-"))
            {
                let end = pause.at_ms() + pause.duration_ms();
                assert!(
                    adds.iter()
                        .any(|(at, _)| pause.at_ms() + 1_200 <= *at && *at + 300 <= end),
                    "seed {seed}: a broker pause across no add: {pause:?}"
                );
                pauses += 1;
            }
            // Every broker kill is an epoch bump before a pause across a cut, and ends a second
            // before any pause on its own cluster begins (or starts well after it ended).
            for kill in scenario
                .faults
                .scripted
                .iter()
                .filter(|f| f.kind() == "kill" && f.nodes()[0].get_ref().contains("-broker-"))
            {
                let end = kill.at_ms() + kill.duration_ms();
                let before_a_paused_add = scenario.faults.scripted.iter().any(|pause| {
                    pause.kind() == "pause"
                        && pause.nodes()[0].get_ref().contains("-broker-")
                        && adds.iter().any(|(at, _)| {
                            pause.at_ms() + 1_200 <= *at
                                && *at + 300 <= pause.at_ms() + pause.duration_ms()
                                && end + 500 <= *at
                        })
                });
                assert!(
                    before_a_paused_add,
                    "seed {seed}: a broker kill before no add a pause spans: {kill:?}"
                );
                let cluster = &kill.nodes()[0].get_ref()[..1];
                let prefix = format!("{cluster}-broker-");
                let mut pauses_there =
                    scenario.faults.scripted.iter().filter(|f| {
                        f.kind() == "pause" && f.nodes()[0].get_ref().starts_with(&prefix)
                    });
                assert!(
                    pauses_there.all(|pause| end + 1_000 <= pause.at_ms()
                        || pause.at_ms() + pause.duration_ms() + RECOVERY_MARGIN_MS
                            <= kill.at_ms()),
                    "seed {seed}: a broker kill near a pause on {cluster}: {kill:?}"
                );
                bumps += 1;
            }
            if scenario.description.contains("adds written topics") {
                // A destination topic written to from the start, added seconds later.
                let written_then_added = scenario.producers.iter().any(|producer| {
                    producer.start_ms.is_none()
                        && scenario.admin.iter().any(|op| {
                            op.kind() == AdminOpKind::AddTopics
                                && op.cluster().get_ref() == producer.cluster.get_ref()
                                && op.at_ms() >= 2_500
                                && op
                                    .topics()
                                    .unwrap_or_default()
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
                let m2_at = |kind: AdminOpKind| -> Vec<u64> {
                    scenario
                        .admin
                        .iter()
                        .filter(|op| {
                            op.kind() == kind && op.mirror().is_some_and(|m| m.get_ref() == "m2")
                        })
                        .map(AdminOpSpec::at_ms)
                        .collect()
                };
                let (pauses, resumes) = (
                    m2_at(AdminOpKind::PauseTopics),
                    m2_at(AdminOpKind::ResumeTopics),
                );
                let paused_across = scenario.admin.iter().any(|op| {
                    let at = op.at_ms();
                    op.kind() == AdminOpKind::AddTopics
                        && op.cluster().get_ref() == "b"
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
                op.kind() == AdminOpKind::AddTopics
                    && op.mirror().is_some_and(|m| m.get_ref().starts_with("loop"))
            }) {
                let cluster = op.cluster().get_ref();
                for topic in op.topics().unwrap_or_default() {
                    assert!(
                        scenario.producers.iter().any(|p| p.transactional
                            && p.cluster.get_ref() == cluster
                            && p.topic.get_ref() == topic.get_ref()),
                        "seed {seed}: loop on {cluster} {} without a transaction",
                        topic.get_ref()
                    );
                }
                // The loop is undone again: its topics are removed after the add.
                let loop_name = op.mirror().expect("filtered on").get_ref();
                assert!(
                    scenario
                        .admin
                        .iter()
                        .any(|other| other.kind() == AdminOpKind::RemoveTopics
                            && other.mirror().is_some_and(|m| m.get_ref() == loop_name)
                            && other.at_ms() > op.at_ms()),
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
    fn source_growth_grows_a_mirrored_origin_topic_while_its_mirror_runs() {
        let mut grown = 0;
        for seed in 0..400 {
            let scenario = generate(seed);
            for op in &scenario.admin {
                let AdminOpSpec::CreatePartitions(create) = op else {
                    continue;
                };
                let (cluster, topic) = (create.cluster.get_ref(), create.topics[0].get_ref());
                let declared = scenario
                    .topics
                    .iter()
                    .find(|t| t.cluster.get_ref() == cluster && &t.name == topic)
                    .map(|t| t.partitions)
                    .expect("grows a declared topic");
                assert!(
                    (declared + 1..=declared + 2).contains(&create.partitions),
                    "seed {seed}: {topic} from {declared} to {}",
                    create.partitions
                );
                // Some mirror sourced from the cluster added the topic at least a second before.
                let added_before = scenario.admin.iter().any(|add| {
                    let AdminOpSpec::AddTopics(add) = add else {
                        return false;
                    };
                    add.at_ms + 1_000 <= create.at_ms
                        && add.topics.iter().any(|t| t.get_ref() == topic)
                        && scenario.admin.iter().any(|made| {
                            matches!(made, AdminOpSpec::CreateMirror(made)
                                if made.mirror.get_ref() == add.mirror.get_ref()
                                    && made.cluster.get_ref() == add.cluster.get_ref()
                                    && made.source.get_ref() == cluster)
                        })
                });
                assert!(
                    added_before,
                    "seed {seed}: {topic} on {cluster} grows unmirrored"
                );
                assert!(scenario.description.contains(&format!("{topic} grows")));
                grown += 1;
            }
        }
        assert!(grown >= 30, "{grown} source topics grown in 400 scenarios");
    }

    #[test]
    fn source_unclean_elections_pause_a_follower_then_kill_its_leader_on_an_unclean_topic() {
        let mut drawn = 0;
        for seed in 0..400 {
            let scenario = generate(seed);
            let faults = &scenario.faults.scripted;
            for pause in faults.iter().filter(|f| f.kind() == "pause") {
                let node = pause.nodes()[0].get_ref();
                let Some((cluster, target)) = node.split_once("-follower:") else {
                    continue;
                };
                let (topic, _) = target.rsplit_once(':').expect("topic:partition");
                let spec = scenario
                    .topics
                    .iter()
                    .find(|t| t.cluster.get_ref() == cluster && t.name == topic)
                    .expect("a declared topic");
                assert!(
                    spec.unclean_leader_election
                        && spec.min_insync_replicas == 1
                        && spec.replication_factor == 2,
                    "seed {seed}: {spec:?}"
                );
                let leader = format!("{cluster}-leader:{target}");
                let kill = faults
                    .iter()
                    .find(|f| f.kind() == "kill" && f.nodes()[0].get_ref() == &leader)
                    .unwrap_or_else(|| panic!("seed {seed}: no kill of {leader}"));
                // Killed after the follower left the ISR, down until after it is back.
                assert!(kill.at_ms() >= pause.at_ms() + 1_500, "seed {seed}");
                assert!(
                    kill.at_ms() < pause.at_ms() + pause.duration_ms(),
                    "seed {seed}"
                );
                assert!(
                    kill.at_ms() + kill.duration_ms() > pause.at_ms() + pause.duration_ms(),
                    "seed {seed}"
                );
                assert!(scenario.description.contains("elects uncleanly"));
                drawn += 1;
            }
        }
        assert!(
            drawn >= 20,
            "{drawn} source unclean elections in 400 scenarios"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_scenario_and_others_differ() {
        assert_eq!(generated_toml(7), generated_toml(7));
        assert_ne!(generated_toml(7), generated_toml(8));
    }
}
