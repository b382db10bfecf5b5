//! The leader-epoch cache (Kafka's `LeaderEpochFileCache`).
//!
//! An ordered list of `(epoch, start_offset)` entries: the offset at which each leader epoch's
//! data begins in this replica's log. Both epochs and start offsets strictly increase along the
//! list; every mutation asserts it. The cache answers OffsetsForLeaderEpoch
//! ([`LeaderEpochCache::end_offset_for`]) and is truncated from the end whenever the log is
//! truncated and from the start whenever the log start offset moves.

use std::fmt;

use crate::common::{LeaderEpoch, Offset};

/// One cache entry: leader epoch `epoch` wrote its first record at `start_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: LeaderEpoch,
    /// The first offset written in that epoch.
    pub start_offset: Offset,
}

/// Answer to an end-offset lookup: `(epoch, end_offset)`, both −1 when undefined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEndOffset {
    /// The largest epoch ≤ the requested one that this replica knows, or −1.
    pub epoch: LeaderEpoch,
    /// The offset after the last record of that epoch (the next epoch's start, or the LEO), or −1.
    pub end_offset: Offset,
}

impl EpochEndOffset {
    /// The undefined answer `(−1, −1)`.
    pub const UNDEFINED: Self = Self {
        epoch: LeaderEpoch::NONE,
        end_offset: Offset(-1),
    };
}

/// The cache itself. Entries are kept in a vector sorted by epoch (and so by start offset).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderEpochCache {
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// The newest entry.
    pub fn latest(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    /// The newest epoch, if any.
    pub fn latest_epoch(&self) -> Option<LeaderEpoch> {
        self.latest().map(|entry| entry.epoch)
    }

    /// Records that `epoch` starts at `start_offset`. Nothing changes when the newest entry
    /// already has this epoch at an offset ≤ `start_offset`. Otherwise tail entries whose epoch
    /// is ≥ `epoch` or whose start offset is ≥ `start_offset` are removed first, so the cache
    /// stays strictly increasing in both fields. Negative inputs are a programming error.
    pub fn assign(&mut self, epoch: LeaderEpoch, start_offset: Offset) {
        assert!(epoch.is_some(), "assign with negative epoch {epoch}");
        assert!(
            start_offset.is_some(),
            "assign with negative offset {start_offset}"
        );
        if let Some(latest) = self.latest() {
            if latest.epoch == epoch && start_offset >= latest.start_offset {
                return;
            }
        }
        while let Some(last) = self.entries.last() {
            if last.epoch >= epoch || last.start_offset >= start_offset {
                self.entries.pop();
            } else {
                break;
            }
        }
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        self.assert_strictly_increasing();
    }

    /// OffsetsForLeaderEpoch: the end offset of `requested` epoch given the log end offset.
    ///
    /// - `requested == -1`, or no entry has an epoch above `requested` while `requested` is not
    ///   the latest: `(−1, −1)`.
    /// - `requested` is the latest epoch: `(requested, log_end_offset)`.
    /// - `requested` is below the first entry: `(requested, first.start_offset)`.
    /// - otherwise: the floor entry's epoch and the start offset of the next higher entry.
    pub fn end_offset_for(&self, requested: LeaderEpoch, log_end_offset: Offset) -> EpochEndOffset {
        if requested.is_none() {
            return EpochEndOffset::UNDEFINED;
        }
        let Some(latest) = self.latest() else {
            return EpochEndOffset::UNDEFINED;
        };
        if requested == latest.epoch {
            return EpochEndOffset {
                epoch: requested,
                end_offset: log_end_offset,
            };
        }
        // The first entry with an epoch above the requested one.
        let higher_index = self
            .entries
            .partition_point(|entry| entry.epoch <= requested);
        let Some(higher) = self.entries.get(higher_index) else {
            return EpochEndOffset::UNDEFINED;
        };
        if higher_index == 0 {
            return EpochEndOffset {
                epoch: requested,
                end_offset: higher.start_offset,
            };
        }
        EpochEndOffset {
            epoch: self.entries[higher_index - 1].epoch,
            end_offset: higher.start_offset,
        }
    }

    /// The epoch of the last entry whose start offset is ≤ `offset`.
    pub fn epoch_for_offset(&self, offset: Offset) -> Option<LeaderEpoch> {
        let index = self
            .entries
            .partition_point(|entry| entry.start_offset <= offset);
        index.checked_sub(1).map(|i| self.entries[i].epoch)
    }

    /// Removes entries whose start offset is ≥ `end_offset` (log truncated to `end_offset`).
    pub fn truncate_from_end(&mut self, end_offset: Offset) {
        while self
            .entries
            .last()
            .is_some_and(|entry| entry.start_offset >= end_offset)
        {
            self.entries.pop();
        }
    }

    /// Removes entries whose start offset is ≤ `start_offset` and puts the last removed one
    /// back starting at `start_offset` (log start moved to `start_offset`).
    pub fn truncate_from_start(&mut self, start_offset: Offset) {
        let removed = self
            .entries
            .partition_point(|entry| entry.start_offset <= start_offset);
        if removed == 0 {
            return;
        }
        let last_removed = self.entries[removed - 1];
        self.entries.drain(..removed);
        self.entries.insert(
            0,
            EpochEntry {
                epoch: last_removed.epoch,
                start_offset,
            },
        );
        self.assert_strictly_increasing();
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    fn assert_strictly_increasing(&self) {
        for pair in self.entries.windows(2) {
            assert!(
                pair[0].epoch < pair[1].epoch,
                "epochs not increasing: {self}"
            );
            assert!(
                pair[0].start_offset < pair[1].start_offset,
                "start offsets not increasing: {self}"
            );
        }
    }
}

impl fmt::Display for LeaderEpochCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (index, entry) in self.entries.iter().enumerate() {
            if index > 0 {
                write!(f, ", ")?;
            }
            write!(f, "({}, {})", entry.epoch, entry.start_offset)?;
        }
        write!(f, "]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: &[(i32, i64)]) -> LeaderEpochCache {
        let mut cache = LeaderEpochCache::new();
        for &(epoch, offset) in entries {
            cache.assign(LeaderEpoch(epoch), Offset(offset));
        }
        cache
    }

    fn pairs(cache: &LeaderEpochCache) -> Vec<(i32, i64)> {
        cache
            .entries()
            .iter()
            .map(|e| (e.epoch.0, e.start_offset.0))
            .collect()
    }

    #[test]
    fn epoch_cache_assign_follows_kafka_table() {
        assert_eq!(pairs(&cache(&[(2, 9), (2, 10)])), vec![(2, 9)]);
        assert_eq!(pairs(&cache(&[(2, 9), (3, 9)])), vec![(3, 9)]);
        assert_eq!(pairs(&cache(&[(2, 6), (3, 5)])), vec![(3, 5)]);
        assert_eq!(
            pairs(&cache(&[(5, 11), (6, 12), (7, 13), (7, 12)])),
            vec![(5, 11), (7, 12)]
        );
        assert_eq!(pairs(&cache(&[(1, 5), (2, 6), (1, 7)])), vec![(1, 7)]);
    }

    #[test]
    fn epoch_cache_end_offset_for_follows_offsets_for_leader_epoch() {
        let c = cache(&[(0, 10), (2, 13), (4, 17)]);
        let answer = |req| {
            let r = c.end_offset_for(LeaderEpoch(req), Offset(20));
            (r.epoch.0, r.end_offset.0)
        };
        assert_eq!(answer(-1), (-1, -1));
        assert_eq!(answer(1), (0, 13));
        assert_eq!(answer(2), (2, 17));
        assert_eq!(answer(3), (2, 17));
        assert_eq!(answer(4), (4, 20));
        assert_eq!(answer(5), (-1, -1));
        let c = cache(&[(5, 11), (6, 12), (7, 13)]);
        assert_eq!(
            c.end_offset_for(LeaderEpoch(4), Offset(20)),
            EpochEndOffset {
                epoch: LeaderEpoch(4),
                end_offset: Offset(11)
            }
        );
        assert_eq!(
            LeaderEpochCache::new().end_offset_for(LeaderEpoch(0), Offset(5)),
            EpochEndOffset::UNDEFINED
        );
    }

    #[test]
    fn epoch_cache_truncate_from_end_drops_entries_at_or_after_offset() {
        let mut c = cache(&[(0, 0), (1, 5), (2, 10)]);
        c.truncate_from_end(Offset(11));
        assert_eq!(pairs(&c), vec![(0, 0), (1, 5), (2, 10)]);
        c.truncate_from_end(Offset(10));
        assert_eq!(pairs(&c), vec![(0, 0), (1, 5)]);
        c.truncate_from_end(Offset(0));
        assert!(c.entries().is_empty());
    }

    #[test]
    fn epoch_cache_truncate_from_start_reinserts_last_removed_at_new_start() {
        let mut c = cache(&[(0, 0), (1, 5), (2, 10)]);
        c.truncate_from_start(Offset(7));
        assert_eq!(pairs(&c), vec![(1, 7), (2, 10)]);
        c.truncate_from_start(Offset(3));
        assert_eq!(pairs(&c), vec![(1, 7), (2, 10)]);
        c.truncate_from_start(Offset(10));
        assert_eq!(pairs(&c), vec![(2, 10)]);
    }

    #[test]
    fn epoch_cache_epoch_for_offset_uses_floor_entry() {
        let c = cache(&[(1, 5), (3, 9)]);
        assert_eq!(c.epoch_for_offset(Offset(4)), None);
        assert_eq!(c.epoch_for_offset(Offset(5)), Some(LeaderEpoch(1)));
        assert_eq!(c.epoch_for_offset(Offset(8)), Some(LeaderEpoch(1)));
        assert_eq!(c.epoch_for_offset(Offset(100)), Some(LeaderEpoch(3)));
    }
}
