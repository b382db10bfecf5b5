//! # mirrorsim-sim — the simulator
//!
//! Runs the sans-IO state machines of the `mirrorsim` crate as madsim nodes: a world of one or
//! more clusters built from a scenario file, a message layer with faults madsim lacks, world-
//! owned disks that lose or tear unflushed writes, explicit fault plans (scripted or swarm),
//! workloads that check themselves, and invariant checkers. Only this crate knows madsim.
//!
//! | module | contract |
//! |---|---|
//! | [`scenario`] | scenario files: parse, validate, errors with file/line/field |
//! | [`faults`] | fault plans from the scenario and the seed |
//! | [`generate`] | a complete, valid scenario drawn from a seed (`mirrorsim generate`, `soak --generate`) |
//! | [`world`] | node table, node drivers, message layer, clocks, trace hash |
//! | [`workload`] | self-describing records and the recorded history |
//! | [`checkers`] | safety and liveness invariants, Jepsen anomalies |
//! | [`mirror_checks`] | the KIP-1279 invariants on mirrored logs |
//! | [`runner`] | one run: phases, fault execution, report |
//! | [`admin`] | the admin client: set-up topics, then the scenario's admin timeline |
//! | [`admin_checks`] | `admin-outcomes`: every admin operation ended as the seed's rules say |
//! | [`soak`] | many seeds over many scenarios on several threads: sharding, failures, coverage |
//! | [`shrink`] | a failing seed's fault plan and workload reduced to a small scenario file |
//! | [`replay`] | one run as a readable timeline: simulated time, node spans, message summaries |
//! | [`variants`] | every design variant × every mirroring scenario: caught by which invariant, how soon |
//! | [`dump_log`] | `mirrorsim dump-log`: a segment decoded batch by batch, streamed |
//! | [`exit`] | the process exit codes, one table |

pub mod admin;
pub mod admin_checks;
pub mod checkers;
pub mod dump_log;
pub mod exit;
pub mod faults;
pub mod generate;
pub mod mirror_checks;
pub mod replay;
pub mod runner;
pub mod scenario;
pub mod shrink;
pub mod soak;
pub mod variants;
pub mod workload;
pub mod world;
