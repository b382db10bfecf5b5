//! The process exit codes of `mirrorsim` (design.md §6), in one table that the binary uses and
//! a test holds against the README's "Exit codes" table.
//!
//! A command that finds several reasons picks the one listed first in [`PRECEDENCE`]: an output
//! that could not be written (the file asked for does not hold the results), then a safety
//! violation, a panic inside the simulation, a liveness violation. Bad input and the
//! shrinker's internal errors end a command before it runs anything, so they never compete.

/// Success: every run passed (`run`, `soak`), the table's control row passed (`variants`),
/// the shrunk file was written and checked (`shrink`), the segment was read to its end, damaged
/// or not, as kafka-dump-log does (`dump-log`).
pub const PASS: u8 = 0;
/// A safety invariant broke.
pub const SAFETY: u8 = 1;
/// Liveness failed after healing (including a set-up that never finished).
pub const LIVENESS: u8 = 2;
/// A panic inside the simulation (a bug of the model or the simulator).
pub const PANIC: u8 = 3;
/// Bad input: a bad or missing flag, an unreadable or invalid scenario (the message names
/// file, line and field path), an unreadable file, a seed that passes given to `shrink`.
pub const BAD_INPUT: u8 = 64;
/// `shrink` wrote a file that does not fail like the seed: a bug in `shrink` (sysexits'
/// `EX_SOFTWARE`).
pub const INTERNAL: u8 = 70;
/// An output file (`--out`) could not be created or written (sysexits' `EX_IOERR`).
pub const OUTPUT_FAILED: u8 = 74;

/// Every code with its one-line meaning, as the README's table lists them.
pub const TABLE: [(u8, &str); 7] = [
    (PASS, "success"),
    (SAFETY, "safety violation"),
    (LIVENESS, "liveness violation"),
    (PANIC, "panic inside the simulation"),
    (BAD_INPUT, "bad input"),
    (INTERNAL, "internal error of `shrink`"),
    (OUTPUT_FAILED, "output file not written"),
];

/// The order in which competing outcomes decide a command's code, first wins.
pub const PRECEDENCE: [u8; 4] = [OUTPUT_FAILED, SAFETY, PANIC, LIVENESS];
