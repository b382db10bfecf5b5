//! The binary's front end of each command (declared by `main.rs`; not part of the library):
//! reading its flags, calling the command in `mirrorsim_sim::commands`, printing what it
//! reports and choosing the exit code.

pub(crate) mod run;
pub(crate) mod shrink;
pub(crate) mod soak;
pub(crate) mod variants;
