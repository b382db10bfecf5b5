//! The commands of the `mirrorsim` binary, one module each, over the world, the fault plans
//! and the checks: [`runner`] runs one seed of a scenario (`run`), and the others are built
//! on it: [`replay`] prints a run as a timeline, [`soak`] runs many seeds on several threads,
//! [`shrink`] reduces a failing one, [`variants`] runs the design variants; [`dump_log`]
//! decodes a segment file and needs no run.

pub mod dump_log;
pub mod replay;
pub mod runner;
pub mod shrink;
pub mod soak;
pub mod variants;
