//! Kafka's numbers as types: an offset in a partition's log, a partition's leader epoch, a
//! producer's id and epoch. Each wraps
//! the integer Kafka's wire format carries (so `-1`, Kafka's "none", stays representable:
//! [`LeaderEpoch::NONE`], [`ProducerId::NONE`], [`ProducerEpoch::NONE`]), orders as that
//! integer, and prints as the bare number, so traces read as Kafka's tools print them. A value
//! of one kind cannot be passed where another is wanted: a leader epoch is not a partition
//! epoch, a member epoch or a broker epoch, a producer epoch is not a leader epoch, and an
//! offset is not a count of bytes or a time. Offsets step by a count (`offset + 1`, `offset - 1`) and their
//! difference is a count (`end - start`), as in Kafka.

use std::fmt;
use std::ops::{Add, Sub};

use serde::{Deserialize, Serialize};

macro_rules! kafka_number {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// Kafka's "none" (`-1` on the wire).
            pub const NONE: Self = Self(-1);

            /// Whether this is a real value rather than [`Self::NONE`] (or another negative
            /// sentinel).
            pub fn is_some(self) -> bool {
                self.0 >= 0
            }

            /// Whether this is [`Self::NONE`] (or another negative sentinel).
            pub fn is_none(self) -> bool {
                !self.is_some()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        // The bare number, as Display: a message's `{:?}` in a trace reads as before.
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

kafka_number! {
    /// An offset in a partition's log: the position of a record (a batch's base offset, a
    /// fetch position, a committed offset) or a bound between records (the log end offset,
    /// the high watermark, the last stable offset, the log start offset).
    Offset(i64)
}

impl Add<i64> for Offset {
    type Output = Offset;

    /// The offset `count` records on.
    fn add(self, count: i64) -> Offset {
        Offset(self.0 + count)
    }
}

impl Sub<i64> for Offset {
    type Output = Offset;

    /// The offset `count` records back.
    fn sub(self, count: i64) -> Offset {
        Offset(self.0 - count)
    }
}

impl Sub for Offset {
    type Output = i64;

    /// How many offsets lie between `other` and `self`.
    fn sub(self, other: Offset) -> i64 {
        self.0 - other.0
    }
}

kafka_number! {
    /// A partition's leader epoch: raised by the controller at every leader election (and by
    /// KIP-1279's BumpLeaderEpochs); stamped on every batch a leader appends; what fetchers,
    /// OffsetsForLeaderEpoch and the leader-epoch cache speak in (KIP-101, KIP-320).
    LeaderEpoch(i32)
}

kafka_number! {
    /// A producer id, handed out by the controller in blocks (idempotent producers) or kept
    /// by a transaction coordinator for a transactional id.
    ProducerId(i64)
}

kafka_number! {
    /// A producer epoch: fences older instances of the same producer id (a transactional
    /// re-init, KIP-360's bump, KIP-890's per-transaction bump).
    ProducerEpoch(i16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_and_order_as_their_integers() {
        assert_eq!(LeaderEpoch(7).to_string(), "7");
        assert_eq!(format!("{:?}", ProducerId(4711)), "4711");
        assert_eq!(format!("{:?}", Some(ProducerEpoch::NONE)), "Some(-1)");
        assert!(LeaderEpoch::NONE < LeaderEpoch(0));
        assert!(!LeaderEpoch::NONE.is_some() && LeaderEpoch(0).is_some());
        assert!(Offset::NONE.is_none() && !Offset(0).is_none());
        assert_eq!(Offset(5) - 1, Offset(4));
        assert_eq!(Offset(5) + 3, Offset(8));
        assert_eq!(Offset(8) - Offset(5), 3);
    }
}
