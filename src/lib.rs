//! # mirrorsim — the modelled KIP-1279 mirroring system
//!
//! This crate is the *system under test*: Kafka's storage, replication and mirroring logic written
//! as plain, deterministic state machines. It contains no networking, no clocks, no randomness and
//! no threads of its own. Every input arrives through a method call that carries the current time
//! (`now_ms`) where time matters, and every output is a return value. The simulator in `sim/` drives
//! these state machines inside madsim; unit tests and proptest drive them directly.
//!
//! Module map:
//!
//! | module | contract |
//! |---|---|
//! | [`record`] | Kafka RecordBatch v2 codec over `bytes::Bytes`: decode with CRC-32C check, encode, control records (ABORT, COMMIT, MIRROR_PID_RESET). |
//! | [`log`] | One partition's log: batches stored byte-for-byte, leader-epoch cache, producer state, transaction index, high watermark and last stable offset, truncation, durable writes through [`log::LogDisk`], recovery. |
//! | [`common`] | Node, broker, cluster, topic and partition ids, offsets, leader epochs, producer ids and epochs as types, Kafka's error codes and the KIP-1279 mirror partition states: the vocabulary every layer above the log shares. |
//! | [`protocol`] | The request/response vocabulary between nodes (re-exporting the [`common`] ids), each kind nested in the family that serves it (controller, replica, coordinator, mirror, cluster), with one-line summaries of messages for traces (`Message::summary`). |
//! | [`metadata`] | KRaft-style metadata records and the image built from them (topics, partitions, brokers, configs, ACLs, producer-id blocks), the topic config keys, and a client's cache of Metadata answers. |
//! | [`controller`] | The single active controller of a cluster (KRaft's QuorumController without a quorum): durable metadata log with recovery, broker registration, heartbeats and fencing, leader election, ISR changes, producer-id blocks, topic creation. |
//! | [`broker`] | The broker as one sans-IO `Node` and a host of components (the replica manager and replica fetcher, the controller session, the coordinators, topic administration, the KIP-1279 components): it routes each request and answer to the component that owns it, carries a moved high watermark on to what waits on it, and merges their deadlines. |
//! | [`node`] | The `Node` trait every modelled node implements (messages and timeouts in, envelopes and a next deadline out) and the `Outbox` helper. |
//! | [`events`] | `BrokerEvent`: what a broker and its components report for checkers and traces, with its one-line trace form. |
//! | [`replica`] | A broker's replicas (`Partition`: log, role, ISR, high watermark), where a replica truncates when its log and the leader's (or the source's) part, the data directories, and two broker components: the replica manager (produce, fetch reads for followers, consumers and other clusters' mirror fetchers, purgatory, the ISR, following the image) and the replica fetcher. |
//! | [`component`] | `BrokerContext`: what a broker lends one of its components for one call. |
//! | [`coordinator`] | Coordinators hosted on brokers: the shard contract (write, then apply), Kafka's key-to-partition hash, the group and transaction shards, and the coordinator host (a broker component: the shards a broker hosts, FindCoordinator). |
//! | [`mirror`] | Everything of KIP-1279 on the destination: the mirror partition state machine, the design variants, the periodic sync's rules, the `__mirror_state` coordinator shard, the read-only gate, and the broker components (the MirrorMetadataManager with its mirror fetcher, the periodic sync, DescribeMirror). |
//! | [`switches`] | The deliberately broken behaviours (`BrokenSwitch`) tests switch on to prove a checker catches them; below every layer, so any may name one. |
//! | [`client`] | The simulated clients (idempotent and transactional producers, plain and group consumers) and the rules they share, e.g. how a consumer turns fetched batches into records (READ_COMMITTED filtering, control batches skipped). |
//!
//! Determinism rules for everything in here: no `HashMap` iteration on a path that changes
//! behaviour (all maps are `BTreeMap`), no `std::time`, no thread RNG, no globals.
#![warn(missing_docs)]

pub mod broker;
pub mod client;
pub mod common;
pub mod component;
pub mod controller;
pub mod coordinator;
pub mod events;
pub mod log;
pub mod metadata;
pub mod mirror;
pub mod node;
pub mod protocol;
pub mod record;
pub mod replica;
pub mod switches;
