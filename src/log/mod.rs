//! One Kafka partition's storage: the log, its leader-epoch cache, producer state, aborted
//! transaction index, durable writes and crash recovery.
//!
//! The rules follow Kafka's `UnifiedLog`, `LeaderEpochFileCache` and `ProducerStateManager`
//! (see `../shared/docs/kafka-storage.md` §3–§5), plus KIP-1279's MIRROR_PID_RESET: when that
//! control batch is appended (by a leader, a follower or a downstream mirror) or replayed in
//! recovery, every producer entry of the partition is removed.

mod disk;
mod epoch_cache;
mod error;
mod partition_log;
mod producer_state;

pub use disk::{DiskError, LogDisk, MemoryDisk, TailFate};
pub use epoch_cache::{EpochEndOffset, EpochEntry, LeaderEpochCache};
pub use error::{AppendError, LogError, OffsetOutOfRange};
pub use partition_log::{
    segment_file_name, AbortedTransaction, FetchDataInfo, FetchIsolation, LogAppendInfo, LogConfig,
    PartitionLog, RecoveryReport, RecoveryTruncation,
};
pub use producer_state::{
    AbortedTxn, AppendOrigin, AppendValidator, BatchMetadata, CompletedTxn, ProducerStateEntry,
    ProducerStateError, ProducerStateManager, ProducerStateUpdate, TxnMetadata,
    NUM_BATCHES_TO_RETAIN,
};
#[cfg(test)]
mod tests;
