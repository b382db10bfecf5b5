//! # mirrorsim-sim — the simulator
//!
//! Runs the sans-IO state machines of the `mirrorsim` crate as madsim nodes: a world of one or
//! more clusters built from a scenario file, a message layer with faults madsim lacks, world-
//! owned disks that lose or tear unflushed writes, explicit fault plans (scripted or swarm),
//! workloads that check themselves, and invariant checkers. Only this crate knows madsim.
//!
//! The modules are its layers, each using only those above it in this table:
//!
//! | module | contract |
//! |---|---|
//! | [`scenario`] | scenario files: parse, validate, errors with file/line/field; [`scenario::generate`] draws a complete, valid scenario from a seed (`mirrorsim generate`, `soak --generate`) |
//! | [`faults`] | fault plans from the scenario and the seed |
//! | [`world`] | node table, node drivers, message layer, clocks, trace hash; [`world::workload`] the self-describing records and the recorded history, [`world::admin`] the admin client (set-up topics, then the scenario's admin timeline) |
//! | [`checks`] | safety and liveness invariants, Jepsen anomalies; [`checks::mirror`] the KIP-1279 invariants on mirrored logs, [`checks::admin`] `admin-outcomes` (every admin operation ended as the seed's rules say) |
//! | [`commands`] | one module per command: [`commands::runner`] one run (phases, fault execution, report; `mirrorsim run`), [`commands::replay`] a run as a readable timeline, [`commands::soak`] many seeds on several threads, [`commands::shrink`] a failing seed reduced to a small scenario file, [`commands::variants`] every design variant against the mirroring scenarios, [`commands::dump_log`] a segment decoded batch by batch |
//! | [`exit`] | the process exit codes, one table |

pub mod checks;
pub mod commands;
pub mod exit;
pub mod faults;
pub mod scenario;
pub mod world;
