//! Model-based tests of [`PartitionLog`] against a small, independent reference model.
//!
//! # The model
//!
//! The model is written from `kafka-storage.md` and the KIP-1279 seed, not from `src/log`. It
//! keeps only:
//! - a `Vec` of logical batches (client data, non-idempotent data, COMMIT/ABORT markers,
//!   MIRROR_PID_RESET), each with its offsets, leader epoch, timestamp and record values;
//! - the high watermark, the leader-epoch cache as a `Vec<(epoch, start)>`, and the leader epoch.
//!
//! Everything else (producer entries, open and completed transactions, the aborted-transaction
//! index, the first unstable offset, which batches are aborted) is recomputed from scratch by one
//! straightforward replay of the batch list ([`Derived::of`]). That the live state equals a replay
//! of the log is itself one of the properties under test: Kafka rebuilds producer state by replay
//! after truncation and on recovery (§3.8), and a follower builds it by replaying what the leader
//! wrote.
//!
//! # Rules covered
//! - §1.4 sequence arithmetic: wrap from `i32::MAX` to 0, the successor check.
//! - §1.6 client produce: control batches from clients are `INVALID_RECORD` (87).
//! - §3.1 producer entries: the epoch, the last five batches of the current epoch (a new epoch
//!   clears them), the coordinator epoch, the last timestamp, the open transaction's first offset.
//! - §3.2 duplicates: a retry of one of the cached five batches (same epoch and sequence range)
//!   succeeds with the ORIGINAL offsets and appends nothing; an older retry fails the sequence
//!   check (45).
//! - §3.3 client rules in order: epoch fencing (47), sequence check (45; a new epoch restarts at
//!   0, an unknown producer may start anywhere, otherwise `last + 1` with wrap), transaction state
//!   (48). Coordinator markers: epoch fencing (47, the classic `<` rule, so a higher epoch bumps)
//!   then coordinator fencing (52); a marker with no open transaction completes nothing.
//! - §3.5 completed transactions, the aborted index entry `(pid, first, marker, lso)` with
//!   `lso` = earliest open transaction of another producer else marker + 1, the first unstable
//!   offset (open transactions and completed ones whose marker is not below the HW) and the LSO.
//! - KIP-1279 / kip1279-spec §5.3: MIRROR_PID_RESET removes every producer entry and the
//!   ongoing-transaction bookkeeping wherever it is appended or replayed. See
//!   [`RESET_CLEARS_COMPLETED_TXNS`] for the one point the spec leaves open.
//! - §4.1 epoch cache `assign` and `truncateFromEnd`; §4.2 a leader assigns its epoch at the LEO
//!   and stamps appends with it; a follower assigns each batch's epoch.
//! - §4.3 the leader HW only increases; §4.7 `truncateTo` (also a target at or past the LEO
//!   drops an epoch assigned at the LEO) and rebuild of producer state and the aborted index.
//! - §5 reads: READ_COMMITTED through `completed_fetch` returns exactly the non-aborted data
//!   records below the LSO and no control records; READ_UNCOMMITTED returns every data record
//!   below the HW.
//! - §3.8 recovery: after a crash (lost, partial or torn unflushed tail) or a corrupted byte, the
//!   log reopens without panicking to exactly the longest valid batch prefix (CRC-checked,
//!   offset-contiguous, checked here by an independent scanner), with the state a follower
//!   gets by appending that prefix.
//!
//! High watermarks are moved to batch boundaries only (a HW is always some replica's LEO).
//! Truncation targets are arbitrary offsets in `[hw, leo]`; a target inside a batch removes that
//! whole batch (Kafka's `LogSegment.truncateTo` cuts at the batch containing the offset).
//!
//! A transaction whose producer entry a MIRROR_PID_RESET removed while it was open is
//! "orphaned": it has no marker, no index entry and no longer holds the LSO, so READ_COMMITTED
//! shows its data (kip1279-spec §5.3 says open transactions must be resolved before the reset;
//! the model just states what a consumer then sees).
//!
//! Random corruption never targets the partition-leader-epoch field (bytes 12..16 of a batch):
//! the CRC does not cover it (§1.1), so such damage is undetectable by design, in Kafka as here.
//! Nor does it target the base offset of the log's first batch; see
//! [`DAMAGE_FIRST_BASE_OFFSET`].
//!
//! # Points settled with the implementation
//! - `recovery_rejects_first_batch_with_corrupt_base_offset`: a segment's first batch must start
//!   at the segment's base offset (the base offset is not CRC-covered).
//! - `reset_keeps_unreplicated_txn_holding_lso`: a reset keeps completed, unreplicated
//!   transactions.
//! - `follower_index_lso_does_not_depend_on_fetch_chunking`: the aborted index's LSO field is
//!   computed in log order, so leader, followers and recovery agree.
//! - `flush_checkpoints_high_watermark`: `flush()` also checkpoints the high watermark.
//!
//! The random properties run 64 cases each; `LOG_MODEL_CASES=n` runs `n` instead.

use mirrorsim::common::{LeaderEpoch, Offset};
use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use mirrorsim::client::{completed_fetch, IsolationLevel};
use mirrorsim::log::{
    AppendOrigin, FetchIsolation, LogConfig, LogDisk, MemoryDisk, PartitionLog, ProducerStateEntry,
    TailFate,
};
use mirrorsim::record::{
    end_transaction_marker, mirror_pid_reset, BatchBuilder, MarkerProducer, RecordBatch,
};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;

/// Producer ids the operations draw from (the first 2–4 are used in a case).
const PIDS: [i64; 4] = [1000, 1001, 1002, 1003];
/// Batches per producer the duplicate check remembers (§3.1).
const RETAINED_BATCHES: usize = 5;
/// How many recent client batches per producer a retry may pick from (more than five, so some
/// retries fall outside the duplicate window).
const RETRY_HISTORY: usize = 7;

/// kip1279-spec §5.3 says a MIRROR_PID_RESET removes "all producer entries ... including any
/// ongoing-transaction bookkeeping". Completed transactions whose marker is not yet below the
/// HW ("unreplicated", §3.5) are neither; they keep holding the LSO until the HW passes their
/// marker. `false` (the implementation's choice, pinned by
/// [`reset_keeps_unreplicated_txn_holding_lso`]) keeps them across a reset.
const RESET_CLEARS_COMPLETED_TXNS: bool = false;

// ---------------------------------------------------------------------------------------------
// Sequence arithmetic (§1.4), written out again rather than imported.
// ---------------------------------------------------------------------------------------------

fn seq_add(sequence: i32, increment: i32) -> i32 {
    let sum = i64::from(sequence) + i64::from(increment);
    if sum > i64::from(i32::MAX) {
        (sum - i64::from(i32::MAX) - 1) as i32
    } else {
        sum as i32
    }
}

fn follows(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (last == i32::MAX && next == 0)
}

// ---------------------------------------------------------------------------------------------
// The model.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// An idempotent or transactional client batch.
    Data {
        pid: i64,
        epoch: i16,
        first_seq: i32,
        txn: bool,
    },
    /// A batch without producer id.
    Plain,
    /// COMMIT or ABORT.
    Marker {
        pid: i64,
        epoch: i16,
        commit: bool,
        coord: i32,
    },
    /// MIRROR_PID_RESET.
    Reset,
}

#[derive(Debug, Clone)]
struct MBatch {
    base: i64,
    len: i64,
    kind: Kind,
    leader_epoch: i32,
    max_ts: i64,
    /// `(key, value)` of each record; empty for control batches.
    records: Vec<(String, String)>,
}

impl MBatch {
    fn last(&self) -> i64 {
        self.base + self.len - 1
    }
    fn next(&self) -> i64 {
        self.base + self.len
    }
    fn is_control(&self) -> bool {
        matches!(self.kind, Kind::Marker { .. } | Kind::Reset)
    }
}

/// One remembered batch of a producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Recent {
    first_seq: i32,
    last_seq: i32,
    first_offset: i64,
    last_offset: i64,
    ts: i64,
}

/// A producer entry, in the model's own shape.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MProducer {
    epoch: i16,
    recent: Vec<Recent>,
    coord: i32,
    last_ts: i64,
    open_txn: Option<i64>,
}

impl MProducer {
    fn unknown() -> Self {
        Self {
            epoch: -1,
            recent: Vec::new(),
            coord: -1,
            last_ts: -1,
            open_txn: None,
        }
    }

    fn last_seq(&self) -> i32 {
        self.recent.last().map_or(-1, |r| r.last_seq)
    }

    /// A batch or marker of another epoch: its remembered batches belong to the old epoch.
    fn adopt_epoch(&mut self, epoch: i16) {
        if self.epoch != epoch {
            self.epoch = epoch;
            self.recent.clear();
        }
    }

    fn from_impl(entry: &ProducerStateEntry) -> Self {
        Self {
            epoch: entry.producer_epoch.0,
            recent: entry
                .batches
                .iter()
                .map(|b| Recent {
                    first_seq: b.first_sequence(),
                    last_seq: b.last_sequence,
                    first_offset: b.first_offset().0,
                    last_offset: b.last_offset.0,
                    ts: b.timestamp,
                })
                .collect(),
            coord: entry.coordinator_epoch,
            last_ts: entry.last_timestamp,
            open_txn: entry.current_txn_first_offset.map(|offset| offset.0),
        }
    }
}

#[derive(Debug, Clone)]
struct Txn {
    pid: i64,
    first: i64,
    marker: Option<i64>,
    aborted: bool,
    /// Base offsets of the transaction's data batches.
    batches: Vec<i64>,
}

/// Aborted index entry `(pid, first, last, lso)`.
type IndexEntry = (i64, i64, i64, i64);

/// Everything the model derives from the batch list by replaying it once.
#[derive(Debug, Clone, Default)]
struct Derived {
    producers: BTreeMap<i64, MProducer>,
    /// Every transaction ever started in the log.
    txns: Vec<Txn>,
    /// Indexes into `txns` that producer state still tracks (cleared by a reset).
    tracked: Vec<usize>,
    index: Vec<IndexEntry>,
}

impl Derived {
    fn of(batches: &[MBatch]) -> Self {
        let mut d = Derived::default();
        for b in batches {
            match &b.kind {
                Kind::Plain => {}
                Kind::Reset => {
                    d.producers.clear();
                    if RESET_CLEARS_COMPLETED_TXNS {
                        d.tracked.clear();
                    } else {
                        let txns = &d.txns;
                        d.tracked.retain(|&i| txns[i].marker.is_some());
                    }
                }
                &Kind::Data {
                    pid,
                    epoch,
                    first_seq,
                    txn,
                } => {
                    let p = d.producers.entry(pid).or_insert_with(MProducer::unknown);
                    p.adopt_epoch(epoch);
                    p.recent.push(Recent {
                        first_seq,
                        last_seq: seq_add(first_seq, (b.len - 1) as i32),
                        first_offset: b.base,
                        last_offset: b.last(),
                        ts: b.max_ts,
                    });
                    if p.recent.len() > RETAINED_BATCHES {
                        p.recent.remove(0);
                    }
                    p.last_ts = b.max_ts;
                    if txn {
                        if p.open_txn.is_none() {
                            p.open_txn = Some(b.base);
                            d.txns.push(Txn {
                                pid,
                                first: b.base,
                                marker: None,
                                aborted: false,
                                batches: Vec::new(),
                            });
                            d.tracked.push(d.txns.len() - 1);
                        }
                        let i = d
                            .open_txn_of(pid)
                            .expect("the producer's transaction is open");
                        d.txns[i].batches.push(b.base);
                    }
                }
                &Kind::Marker {
                    pid,
                    epoch,
                    commit,
                    coord,
                } => {
                    let open = d.producers.get(&pid).and_then(|p| p.open_txn);
                    if let Some(first) = open {
                        let i = d.open_txn_of(pid).expect("open transaction is tracked");
                        if !commit {
                            let lso = d
                                .tracked
                                .iter()
                                .map(|&j| &d.txns[j])
                                .filter(|t| t.marker.is_none() && t.pid != pid)
                                .map(|t| t.first)
                                .min()
                                .unwrap_or(b.base + 1);
                            d.index.push((pid, first, b.base, lso));
                        }
                        d.txns[i].marker = Some(b.base);
                        d.txns[i].aborted = !commit;
                    }
                    let p = d.producers.entry(pid).or_insert_with(MProducer::unknown);
                    p.adopt_epoch(epoch);
                    p.coord = coord;
                    p.open_txn = None;
                    p.last_ts = b.max_ts;
                }
            }
        }
        d
    }

    fn open_txn_of(&self, pid: i64) -> Option<usize> {
        self.tracked
            .iter()
            .copied()
            .find(|&i| self.txns[i].pid == pid && self.txns[i].marker.is_none())
    }

    /// Open transactions: first offset → producer id.
    fn open_txns(&self) -> BTreeMap<i64, i64> {
        self.tracked
            .iter()
            .map(|&i| &self.txns[i])
            .filter(|t| t.marker.is_none())
            .map(|t| (t.first, t.pid))
            .collect()
    }

    fn first_unstable(&self, hw: i64) -> Option<i64> {
        self.tracked
            .iter()
            .map(|&i| &self.txns[i])
            .filter(|t| t.marker.is_none_or(|m| m >= hw))
            .map(|t| t.first)
            .min()
    }

    /// Base offsets of data batches that belong to aborted transactions.
    fn aborted_batches(&self) -> BTreeSet<i64> {
        self.txns
            .iter()
            .filter(|t| t.aborted)
            .flat_map(|t| t.batches.iter().copied())
            .collect()
    }
}

/// What the model says an append does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Append,
    Duplicate { first: i64, last: i64 },
    Reject(i16),
}

#[derive(Debug, Clone)]
struct Model {
    batches: Vec<MBatch>,
    hw: i64,
    epochs: Vec<(i32, i64)>,
    leader_epoch: i32,
}

impl Model {
    fn new() -> Self {
        let mut model = Self {
            batches: Vec::new(),
            hw: 0,
            epochs: Vec::new(),
            leader_epoch: 0,
        };
        model.assign_epoch(0, 0);
        model
    }

    fn leo(&self) -> i64 {
        self.batches.last().map_or(0, MBatch::next)
    }

    fn lso(&self, d: &Derived) -> i64 {
        match d.first_unstable(self.hw) {
            Some(first) if first < self.hw => first,
            _ => self.hw,
        }
    }

    /// §4.1 `assign`.
    fn assign_epoch(&mut self, epoch: i32, start: i64) {
        if let Some(&(latest, latest_start)) = self.epochs.last() {
            if latest == epoch && start >= latest_start {
                return;
            }
        }
        while self
            .epochs
            .last()
            .is_some_and(|&(e, s)| e >= epoch || s >= start)
        {
            self.epochs.pop();
        }
        self.epochs.push((epoch, start));
    }

    /// §4.1 `truncateFromEnd`.
    fn epochs_truncate_from_end(&mut self, end: i64) {
        while self.epochs.last().is_some_and(|&(_, s)| s >= end) {
            self.epochs.pop();
        }
    }

    /// §3.2/§3.3 for a client batch of an idempotent or transactional producer.
    fn client_rule(d: &Derived, pid: i64, epoch: i16, first_seq: i32, n: i64, txn: bool) -> Expect {
        let Some(p) = d.producers.get(&pid) else {
            // No state: any epoch and sequence are accepted (KIP-360), no transaction is open.
            return Expect::Append;
        };
        let last_seq = seq_add(first_seq, (n - 1) as i32);
        if epoch == p.epoch {
            if let Some(r) = p
                .recent
                .iter()
                .find(|r| r.first_seq == first_seq && r.last_seq == last_seq)
            {
                return Expect::Duplicate {
                    first: r.first_offset,
                    last: r.last_offset,
                };
            }
        }
        if epoch < p.epoch {
            return Expect::Reject(47);
        }
        if epoch != p.epoch {
            if first_seq != 0 {
                return Expect::Reject(45);
            }
        } else if !follows(p.last_seq(), first_seq) {
            return Expect::Reject(45);
        }
        if p.open_txn.is_some() && !txn {
            return Expect::Reject(48);
        }
        Expect::Append
    }

    /// §3.3 end marker with COORDINATOR origin (classic epoch rule).
    fn marker_rule(d: &Derived, pid: i64, epoch: i16, coord: i32) -> Expect {
        match d.producers.get(&pid) {
            Some(p) if epoch < p.epoch => Expect::Reject(47),
            Some(p) if p.coord > coord => Expect::Reject(52),
            _ => Expect::Append,
        }
    }

    fn push(&mut self, kind: Kind, len: i64, max_ts: i64, records: Vec<(String, String)>) {
        let base = self.leo();
        self.batches.push(MBatch {
            base,
            len,
            kind,
            leader_epoch: self.leader_epoch,
            max_ts,
            records,
        });
        let epoch = self.leader_epoch;
        self.assign_epoch(epoch, base);
    }

    /// §4.7; returns the new LEO.
    fn truncate_to(&mut self, target: i64) -> i64 {
        if target >= self.leo() {
            let leo = self.leo();
            self.epochs_truncate_from_end(leo);
            return leo;
        }
        // Whole batches: the batch containing `target` goes too.
        self.batches.retain(|b| b.last() < target);
        let leo = self.leo();
        self.epochs_truncate_from_end(leo);
        self.hw = self.hw.min(leo);
        leo
    }

    /// Batch boundaries in `[hw, leo]`: where a high watermark can sit.
    fn boundaries_from_hw(&self) -> Vec<i64> {
        let mut out: Vec<i64> = self
            .batches
            .iter()
            .map(|b| b.base)
            .filter(|&o| o >= self.hw)
            .collect();
        out.push(self.leo());
        out
    }

    /// Data records with offset in `[from, to)`, optionally hiding aborted transactions.
    fn records_between(
        &self,
        from: i64,
        to: i64,
        hidden: Option<&BTreeSet<i64>>,
    ) -> Vec<(i64, String, String)> {
        let mut out = Vec::new();
        for b in &self.batches {
            if b.is_control() || hidden.is_some_and(|h| h.contains(&b.base)) {
                continue;
            }
            for (i, (k, v)) in b.records.iter().enumerate() {
                let offset = b.base + i as i64;
                if offset >= from && offset < to {
                    out.push((offset, k.clone(), v.clone()));
                }
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Operations.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum EpochChoice {
    Keep,
    Bump,
    Lower,
    Exactly(i16),
}

impl EpochChoice {
    /// The epoch to send, given the producer's known epoch (0 for an unknown producer).
    fn resolve(self, known: Option<&MProducer>) -> i16 {
        let base_epoch = known.map_or(0, |p| p.epoch);
        match self {
            EpochChoice::Keep => base_epoch,
            EpochChoice::Bump => base_epoch + 1,
            EpochChoice::Lower => (base_epoch - 1).max(0),
            EpochChoice::Exactly(e) => e,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum SeqChoice {
    Next,
    /// Resend the k-th most recent batch this client sent (0 = the last one).
    Retry(usize),
    Gap(i32),
    /// For a producer the log does not know: start `d` below `i32::MAX` so sequences wrap.
    NearMax(i32),
}

#[derive(Debug, Clone, Copy)]
enum TxnChoice {
    /// Transactional while the producer has an open transaction, else idempotent.
    Auto,
    /// Transactional (starts a transaction if none is open).
    Transactional,
    /// Idempotent, even while a transaction is open (48 then).
    Idempotent,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Produce {
        pid: usize,
        epoch: EpochChoice,
        seq: SeqChoice,
        txn: TxnChoice,
        records: u8,
    },
    Plain {
        records: u8,
    },
    Marker {
        pid: usize,
        commit: bool,
        epoch: EpochChoice,
        coord_delta: i32,
    },
    Reset,
    /// A client tries to produce a control batch (marker if true, else a reset).
    ClientControl(bool),
    HighWatermark(u16),
    Truncate(u16),
    TruncateToLso,
    EpochBump(i32),
}

impl Op {
    fn is_truncation(self) -> bool {
        matches!(self, Op::Truncate(_) | Op::TruncateToLso)
    }
}

fn epoch_choice() -> impl Strategy<Value = EpochChoice> {
    prop_oneof![
        10 => Just(EpochChoice::Keep),
        2 => Just(EpochChoice::Bump),
        1 => Just(EpochChoice::Lower),
        1 => (0i16..4).prop_map(EpochChoice::Exactly),
    ]
}

fn seq_choice() -> impl Strategy<Value = SeqChoice> {
    prop_oneof![
        12 => Just(SeqChoice::Next),
        4 => (0usize..RETRY_HISTORY).prop_map(SeqChoice::Retry),
        1 => (1i32..4).prop_map(SeqChoice::Gap),
        2 => (0i32..4).prop_map(SeqChoice::NearMax),
    ]
}

fn txn_choice() -> impl Strategy<Value = TxnChoice> {
    prop_oneof![
        6 => Just(TxnChoice::Auto),
        3 => Just(TxnChoice::Transactional),
        1 => Just(TxnChoice::Idempotent),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        40 => (0usize..4, epoch_choice(), seq_choice(), txn_choice(), 1u8..=4).prop_map(
            |(pid, epoch, seq, txn, records)| Op::Produce { pid, epoch, seq, txn, records }
        ),
        4 => (1u8..=4).prop_map(|records| Op::Plain { records }),
        14 => (0usize..4, any::<bool>(), epoch_choice(), -1i32..=1).prop_map(
            |(pid, commit, epoch, coord_delta)| Op::Marker { pid, commit, epoch, coord_delta }
        ),
        3 => Just(Op::Reset),
        1 => any::<bool>().prop_map(Op::ClientControl),
        12 => any::<u16>().prop_map(Op::HighWatermark),
        3 => any::<u16>().prop_map(Op::Truncate),
        1 => Just(Op::TruncateToLso),
        3 => (1i32..=2).prop_map(Op::EpochBump),
    ]
}

fn log_config() -> impl Strategy<Value = LogConfig> {
    prop_oneof![Just(300usize), Just(1 << 20)].prop_map(|segment_bytes| LogConfig {
        segment_bytes,
        ..LogConfig::default()
    })
}

/// `fraction / 65536` of the way through `n` items.
fn pick(n: usize, fraction: u16) -> usize {
    (usize::from(fraction) * n) >> 16
}

// ---------------------------------------------------------------------------------------------
// The harness: one log, one model, the same operations.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Sent {
    batch: RecordBatch,
    epoch: i16,
    first_seq: i32,
    txn: bool,
    records: Vec<(String, String)>,
}

struct Harness {
    log: PartitionLog<MemoryDisk>,
    model: Model,
    pids: usize,
    history: BTreeMap<i64, Vec<Sent>>,
    clock: i64,
    step: usize,
}

fn open_empty(config: &LogConfig) -> PartitionLog<MemoryDisk> {
    PartitionLog::open(MemoryDisk::new(), config.clone())
        .expect("an empty disk opens")
        .0
}

fn records_of(n: u8, pid: i64, step: usize, clock: i64) -> (Vec<(String, String)>, Vec<i64>) {
    let records = (0..n)
        .map(|i| (format!("k{pid}"), format!("v{step}.{i}")))
        .collect();
    let timestamps = (0..i64::from(n)).map(|i| clock + i).collect();
    (records, timestamps)
}

fn build_batch(
    producer: Option<(i64, i16, i32, bool)>,
    records: &[(String, String)],
    timestamps: &[i64],
) -> RecordBatch {
    let mut builder = match producer {
        Some((pid, epoch, seq, txn)) => {
            let mut b = BatchBuilder::idempotent(pid, epoch, seq);
            b.transactional = txn;
            b
        }
        None => BatchBuilder::default(),
    };
    for ((key, value), &ts) in records.iter().zip(timestamps) {
        builder.append(
            ts,
            Some(Bytes::from(key.clone())),
            Some(Bytes::from(value.clone())),
            Vec::new(),
        );
    }
    builder.build()
}

impl Harness {
    fn new(config: &LogConfig, pids: usize) -> Self {
        let mut log = open_empty(config);
        log.assign_epoch_start_offset(LeaderEpoch(0));
        Self {
            log,
            model: Model::new(),
            pids,
            history: BTreeMap::new(),
            clock: 1_700_000_000_000,
            step: 0,
        }
    }

    fn pid(&self, index: usize) -> i64 {
        PIDS[index % self.pids]
    }

    /// Applies `op` to both, comparing the outcome of appends and truncations.
    fn apply(&mut self, op: Op) {
        self.step += 1;
        self.clock += 10;
        let ctx = format!("step {} {:?}", self.step, op);
        let d = Derived::of(&self.model.batches);
        let leader_epoch = self.model.leader_epoch;
        match op {
            Op::Produce {
                pid,
                epoch,
                seq,
                txn,
                records,
            } => {
                let pid = self.pid(pid);
                let known = d.producers.get(&pid);
                let history = self.history.entry(pid).or_default();
                let retry = match seq {
                    SeqChoice::Retry(k) if k < history.len() => {
                        Some(history[history.len() - 1 - k].clone())
                    }
                    _ => None,
                };
                let sent = match retry.clone() {
                    Some(sent) => sent,
                    None => {
                        let epoch = epoch.resolve(known);
                        let next = match known {
                            Some(p) if p.epoch == epoch && p.last_seq() >= 0 => {
                                seq_add(p.last_seq(), 1)
                            }
                            _ => 0,
                        };
                        let first_seq = match seq {
                            SeqChoice::Next | SeqChoice::Retry(_) => next,
                            SeqChoice::Gap(g) => seq_add(next, g),
                            SeqChoice::NearMax(below) if known.is_none() => i32::MAX - below,
                            SeqChoice::NearMax(_) => next,
                        };
                        let txn = match txn {
                            TxnChoice::Auto => known.is_some_and(|p| p.open_txn.is_some()),
                            TxnChoice::Transactional => true,
                            TxnChoice::Idempotent => false,
                        };
                        let (recs, timestamps) = records_of(records, pid, self.step, self.clock);
                        let batch =
                            build_batch(Some((pid, epoch, first_seq, txn)), &recs, &timestamps);
                        Sent {
                            batch,
                            epoch,
                            first_seq,
                            txn,
                            records: recs,
                        }
                    }
                };
                if retry.is_none() {
                    history.push(sent.clone());
                    if history.len() > RETRY_HISTORY {
                        history.remove(0);
                    }
                }
                let n = sent.records.len() as i64;
                let expect = Model::client_rule(&d, pid, sent.epoch, sent.first_seq, n, sent.txn);
                let result = self.log.append_as_leader(
                    &sent.batch,
                    LeaderEpoch(leader_epoch),
                    AppendOrigin::Client,
                    self.clock,
                );
                let kind = Kind::Data {
                    pid,
                    epoch: sent.epoch,
                    first_seq: sent.first_seq,
                    txn: sent.txn,
                };
                let max_ts = sent.batch.header().max_timestamp;
                self.check_append(&ctx, expect, result, kind, n, max_ts, sent.records);
            }
            Op::Plain { records } => {
                let (recs, timestamps) = records_of(records, -1, self.step, self.clock);
                let batch = build_batch(None, &recs, &timestamps);
                let result = self.log.append_as_leader(
                    &batch,
                    LeaderEpoch(leader_epoch),
                    AppendOrigin::Client,
                    self.clock,
                );
                let max_ts = batch.header().max_timestamp;
                let n = recs.len() as i64;
                self.check_append(&ctx, Expect::Append, result, Kind::Plain, n, max_ts, recs);
            }
            Op::Marker {
                pid,
                commit,
                epoch,
                coord_delta,
            } => {
                let pid = self.pid(pid);
                let known = d.producers.get(&pid);
                let epoch = epoch.resolve(known);
                let coord = (known.map_or(0, |p| p.coord.max(0)) + coord_delta).max(0);
                let batch = end_transaction_marker(
                    MarkerProducer {
                        producer_id: pid,
                        producer_epoch: epoch,
                    },
                    commit,
                    coord,
                    self.clock,
                );
                let expect = Model::marker_rule(&d, pid, epoch, coord);
                let result = self.log.append_as_leader(
                    &batch,
                    LeaderEpoch(leader_epoch),
                    AppendOrigin::Coordinator,
                    self.clock,
                );
                let kind = Kind::Marker {
                    pid,
                    epoch,
                    commit,
                    coord,
                };
                self.check_append(&ctx, expect, result, kind, 1, self.clock, Vec::new());
            }
            Op::Reset => {
                let batch = mirror_pid_reset("source-cluster", self.clock);
                let result = self.log.append_as_leader(
                    &batch,
                    LeaderEpoch(leader_epoch),
                    AppendOrigin::Coordinator,
                    self.clock,
                );
                if let Ok(info) = &result {
                    assert!(info.producer_state_reset, "{ctx}: reset not reported");
                }
                self.check_append(
                    &ctx,
                    Expect::Append,
                    result,
                    Kind::Reset,
                    1,
                    self.clock,
                    vec![],
                );
            }
            Op::ClientControl(marker) => {
                let batch = if marker {
                    end_transaction_marker(
                        MarkerProducer {
                            producer_id: self.pid(0),
                            producer_epoch: 0,
                        },
                        true,
                        0,
                        self.clock,
                    )
                } else {
                    mirror_pid_reset("source-cluster", self.clock)
                };
                let result = self.log.append_as_leader(
                    &batch,
                    LeaderEpoch(leader_epoch),
                    AppendOrigin::Client,
                    self.clock,
                );
                self.check_append(&ctx, Expect::Reject(87), result, Kind::Reset, 1, 0, vec![]);
            }
            Op::HighWatermark(fraction) => {
                let candidates = self.model.boundaries_from_hw();
                let target = candidates[pick(candidates.len(), fraction)];
                let moved = self.log.maybe_increment_high_watermark(Offset(target));
                assert_eq!(moved, target > self.model.hw, "{ctx}: HW moved");
                self.model.hw = self.model.hw.max(target);
            }
            Op::Truncate(fraction) => {
                let (hw, leo) = (self.model.hw, self.model.leo());
                let target = hw + pick((leo - hw + 1) as usize, fraction) as i64;
                self.truncate(&ctx, target);
            }
            Op::TruncateToLso => {
                let target = self.model.lso(&d);
                self.truncate(&ctx, target);
            }
            Op::EpochBump(by) => {
                self.model.leader_epoch += by;
                let (epoch, leo) = (self.model.leader_epoch, self.model.leo());
                self.log.assign_epoch_start_offset(LeaderEpoch(epoch));
                self.model.assign_epoch(epoch, leo);
            }
        }
    }

    fn truncate(&mut self, ctx: &str, target: i64) {
        let new_end = self
            .log
            .truncate_to(Offset(target))
            .expect("truncation on a memory disk");
        let expected = self.model.truncate_to(target);
        assert_eq!(
            new_end,
            Offset(expected),
            "{ctx}: LEO after truncate_to({target})"
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn check_append(
        &mut self,
        ctx: &str,
        expect: Expect,
        result: Result<mirrorsim::log::LogAppendInfo, mirrorsim::log::AppendError>,
        kind: Kind,
        len: i64,
        max_ts: i64,
        records: Vec<(String, String)>,
    ) {
        let leo = self.model.leo();
        match (expect, &result) {
            (Expect::Append, Ok(info)) if !info.duplicate => {
                assert_eq!(
                    (info.first_offset, info.last_offset),
                    (Offset(leo), Offset(leo + len - 1)),
                    "{ctx}: assigned offsets"
                );
                self.model.push(kind, len, max_ts, records);
            }
            (Expect::Duplicate { first, last }, Ok(info)) if info.duplicate => {
                assert_eq!(
                    (info.first_offset, info.last_offset),
                    (Offset(first), Offset(last)),
                    "{ctx}: a duplicate must report the original offsets"
                );
            }
            (Expect::Reject(code), Err(error)) => {
                assert_eq!(error.error_code(), code, "{ctx}: error {error}");
            }
            _ => panic!("{ctx}: model expects {expect:?}, log returned {result:?}"),
        }
    }

    /// Compares every observable against the model; `fraction` picks a fetch offset.
    fn check(&self, fraction: u16) {
        let ctx = format!("after step {}", self.step);
        let log = &self.log;
        let model = &self.model;
        let d = Derived::of(&model.batches);
        assert_eq!(log.log_start_offset(), Offset(0), "{ctx}: log start");
        assert_eq!(log.log_end_offset(), Offset(model.leo()), "{ctx}: LEO");
        assert_eq!(log.high_watermark(), Offset(model.hw), "{ctx}: HW");
        assert_eq!(
            log.first_unstable_offset(),
            d.first_unstable(model.hw).map(Offset),
            "{ctx}: first unstable offset"
        );
        let lso = model.lso(&d);
        assert_eq!(log.last_stable_offset(), Offset(lso), "{ctx}: LSO");
        check_producers(&ctx, log, &d);
        assert_eq!(
            aborted_index(log),
            d.index,
            "{ctx}: aborted transaction index"
        );
        assert_eq!(epoch_entries(log), model.epochs, "{ctx}: epoch cache");
        assert_eq!(
            log.to_segment_bytes(),
            segment_files_bytes(log.disk()),
            "{ctx}: retained batches vs the segment files on disk"
        );
        let layout: Vec<(i64, i64, i32, bool)> = log
            .batches()
            .map(|b| {
                (
                    b.base_offset(),
                    b.last_offset(),
                    b.partition_leader_epoch(),
                    b.is_control(),
                )
            })
            .collect();
        let expected_layout: Vec<(i64, i64, i32, bool)> = model
            .batches
            .iter()
            .map(|b| (b.base, b.last(), b.leader_epoch, b.is_control()))
            .collect();
        assert_eq!(
            layout, expected_layout,
            "{ctx}: batches (base, last, leader epoch, control)"
        );

        let hidden = d.aborted_batches();
        for from in [0, pick(model.leo() as usize + 1, fraction) as i64] {
            let info = log
                .read(Offset(from), 1 << 30, FetchIsolation::TxnCommitted, true)
                .expect("offset within the log");
            assert_eq!(info.last_stable_offset, Offset(lso), "{ctx}: LSO in fetch");
            let fetched = completed_fetch(
                from,
                &info.batches,
                info.aborted_transactions.as_deref().unwrap_or(&[]),
                IsolationLevel::ReadCommitted,
            )
            .expect("stored batches decode");
            assert_eq!(
                consumer_view(&fetched.records),
                model.records_between(from, lso, Some(&hidden)),
                "{ctx}: READ_COMMITTED from {from}"
            );
            let info = log
                .read(Offset(from), 1 << 30, FetchIsolation::HighWatermark, true)
                .expect("offset within the log");
            let fetched =
                completed_fetch(from, &info.batches, &[], IsolationLevel::ReadUncommitted)
                    .expect("stored batches decode");
            assert_eq!(
                consumer_view(&fetched.records),
                model.records_between(from, model.hw, None),
                "{ctx}: READ_UNCOMMITTED from {from}"
            );
        }
    }
}

fn check_producers(ctx: &str, log: &PartitionLog<MemoryDisk>, d: &Derived) {
    let state = log.producer_state();
    let actual: BTreeMap<i64, MProducer> = state
        .producers()
        .iter()
        .map(|(&pid, entry)| {
            assert_eq!(entry.producer_id, pid, "{ctx}: entry keyed by its pid");
            (pid.0, MProducer::from_impl(entry))
        })
        .collect();
    assert_eq!(actual, d.producers, "{ctx}: producer entries");
    let open: BTreeMap<i64, i64> = state
        .ongoing_txns()
        .iter()
        .map(|(&first, txn)| (first.0, txn.producer_id.0))
        .collect();
    assert_eq!(open, d.open_txns(), "{ctx}: open transactions");
}

fn aborted_index(log: &PartitionLog<MemoryDisk>) -> Vec<IndexEntry> {
    log.aborted_txns()
        .iter()
        .map(|t| {
            (
                t.producer_id.0,
                t.first_offset.0,
                t.last_offset.0,
                t.last_stable_offset.0,
            )
        })
        .collect()
}

fn epoch_entries(log: &PartitionLog<MemoryDisk>) -> Vec<(i32, i64)> {
    log.epoch_cache()
        .entries()
        .iter()
        .map(|e| (e.epoch.0, e.start_offset.0))
        .collect()
}

/// The leader's epoch cache as a replica holding the same batches must see it: an epoch
/// assigned at the LEO that has no data yet is not in the log (§4.7: `truncateFromEnd(LEO)`).
fn epoch_entries_with_data(log: &PartitionLog<MemoryDisk>) -> Vec<(i32, i64)> {
    let leo = log.log_end_offset();
    epoch_entries(log)
        .into_iter()
        .filter(|&(_, start)| start < leo.0)
        .collect()
}

/// The segment files on `disk` (flushed or not), concatenated in base-offset order.
fn segment_files_bytes(disk: &MemoryDisk) -> Bytes {
    let mut out = Vec::new();
    for (_, name) in segment_files(disk) {
        out.extend_from_slice(&disk.read_file(&name).expect("listed file"));
    }
    Bytes::from(out)
}

fn consumer_view(records: &[mirrorsim::client::ConsumerRecord]) -> Vec<(i64, String, String)> {
    let text = |b: &Option<Bytes>| String::from_utf8(b.as_deref().unwrap_or(b"").to_vec()).unwrap();
    records
        .iter()
        .map(|r| (r.offset, text(&r.key), text(&r.value)))
        .collect()
}

/// Runs `ops` on a fresh harness, checking after each.
fn run(config: &LogConfig, pids: usize, ops: &[(Op, u16)]) -> Harness {
    let mut h = Harness::new(config, pids);
    h.check(0);
    for &(op, fraction) in ops {
        h.apply(op);
        h.check(fraction);
    }
    h
}

fn ops(max: usize) -> impl Strategy<Value = Vec<(Op, u16)>> {
    prop::collection::vec((op(), any::<u16>()), 1..max)
}

fn proptest_config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("LOG_MODEL_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(64),
        // Failures are reported in the test output; nothing is written next to the tests.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Recovery oracle: an independent scan of the segment files.
// ---------------------------------------------------------------------------------------------

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// If a valid batch starting at offset `expected` begins `buf`: its size and next offset.
fn valid_batch_at(buf: &[u8], expected: i64) -> Option<(usize, i64)> {
    if buf.len() < 61 {
        return None;
    }
    let length = be_i32(buf, 8);
    if length < 49 || length as usize + 12 > buf.len() {
        return None;
    }
    let batch = &buf[..length as usize + 12];
    let stored_crc = be_i32(batch, 17) as u32;
    if batch[16] != 2 || crc32c::crc32c(&batch[21..]) != stored_crc {
        return None;
    }
    let last_offset_delta = be_i32(batch, 23);
    if be_i64(batch, 0) != expected || last_offset_delta < 0 {
        return None;
    }
    Some((batch.len(), expected + i64::from(last_offset_delta) + 1))
}

fn segment_base(name: &str) -> Option<i64> {
    let digits = name.strip_suffix(".log")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// `(base offset, file name)` of the segment files on `disk`, in base-offset order.
fn segment_files(disk: &MemoryDisk) -> Vec<(i64, String)> {
    let mut segments: Vec<(i64, String)> = disk
        .list_files()
        .into_iter()
        .filter_map(|name| segment_base(&name).map(|base| (base, name)))
        .collect();
    segments.sort();
    segments
}

/// The longest valid prefix of batches on `disk`: segments in base-offset order, each starting
/// where the previous one ended, batches CRC-valid and offset-contiguous from the first
/// segment's base.
fn surviving_prefix(disk: &MemoryDisk) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut expected: Option<i64> = None;
    for (base, name) in segment_files(disk) {
        if expected.is_some_and(|e| e != base) {
            break;
        }
        let mut next = expected.unwrap_or(base);
        let data = disk.read_file(&name).expect("listed file");
        let mut position = 0;
        while position < data.len() {
            match valid_batch_at(&data[position..], next) {
                Some((size, after)) => {
                    out.push(data.slice(position..position + size));
                    position += size;
                    next = after;
                }
                None => return out,
            }
        }
        expected = Some(next);
    }
    out
}

/// Start positions of the batches in an undamaged segment file.
fn batch_starts(data: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut position = 0;
    while position + 12 <= data.len() {
        starts.push(position);
        position += be_i32(data, position + 8) as usize + 12;
    }
    starts
}

/// Whether random damage may hit the base offset of a segment's first batch (a field the CRC
/// does not cover). Recovery rejects a first batch that does not start at its segment's base
/// offset (see [`recovery_rejects_first_batch_with_corrupt_base_offset`]), so it may.
const DAMAGE_FIRST_BASE_OFFSET: bool = true;

/// Steers a damage position in `data` (a segment file, `first_segment` if it has the lowest
/// base offset) away from fields the CRC does not cover where damage is undetectable by design
/// (a batch's leader epoch, bytes 12..16; and the first base offset when
/// [`DAMAGE_FIRST_BASE_OFFSET`] is off), onto the CRC-covered bytes after them.
fn steer_damage(data: &[u8], position: usize, first_segment: bool) -> usize {
    let start = batch_starts(data)
        .into_iter()
        .rfind(|&s| s <= position)
        .unwrap_or(0);
    match position - start {
        within @ 12..16 => start + within + 5,
        within @ 0..8 if first_segment && start == 0 && !DAMAGE_FIRST_BASE_OFFSET => {
            start + within + 17
        }
        _ => position,
    }
}

/// A fresh log that appended `batches` as a follower, one batch per call (the aborted index must not
/// depend on how the batches were chunked).
fn follower_of(config: &LogConfig, batches: &[Bytes]) -> PartitionLog<MemoryDisk> {
    let mut follower = open_empty(config);
    for bytes in batches {
        let batch = RecordBatch::decode_exact(bytes.clone()).expect("prefix batches are valid");
        follower
            .append_as_follower(std::slice::from_ref(&batch))
            .expect("a valid contiguous prefix replicates");
    }
    follower
}

fn assert_index_matches(ctx: &str, actual: &[IndexEntry], expected: &[IndexEntry]) {
    assert_eq!(actual, expected, "{ctx}: aborted index");
}

/// `a` and `b` hold the same producer state, aborted index, epoch cache, offsets and bytes.
/// `a`'s epoch cache may also hold an epoch assigned at its LEO that has no data yet.
fn assert_same_replica(ctx: &str, a: &PartitionLog<MemoryDisk>, b: &PartitionLog<MemoryDisk>) {
    assert_eq!(a.log_end_offset(), b.log_end_offset(), "{ctx}: LEO");
    assert_eq!(
        a.log_start_offset(),
        b.log_start_offset(),
        "{ctx}: log start"
    );
    assert_eq!(a.high_watermark(), b.high_watermark(), "{ctx}: HW");
    assert_eq!(
        a.producer_state(),
        b.producer_state(),
        "{ctx}: producer state"
    );
    assert_index_matches(ctx, &aborted_index(b), &aborted_index(a));
    assert_eq!(
        epoch_entries_with_data(a),
        epoch_entries(b),
        "{ctx}: epoch cache"
    );
    assert_eq!(
        a.to_segment_bytes(),
        b.to_segment_bytes(),
        "{ctx}: segment bytes"
    );
    assert_eq!(a.last_stable_offset(), b.last_stable_offset(), "{ctx}: LSO");
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    /// Power failure: `kept` of the unflushed tail survives, optionally with a torn byte.
    Crash { kept: u16, torn: Option<(u16, u8)> },
    /// One byte of one segment file flipped.
    Corrupt { file: u16, position: u16, mask: u8 },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (
            prop_oneof![Just(0u16), Just(u16::MAX), any::<u16>()],
            prop::option::of((any::<u16>(), 1u8..=255))
        )
            .prop_map(|(kept, torn)| Damage::Crash { kept, torn }),
        (any::<u16>(), any::<u16>(), 1u8..=255).prop_map(|(file, position, mask)| {
            Damage::Corrupt {
                file,
                position,
                mask,
            }
        }),
    ]
}

// ---------------------------------------------------------------------------------------------
// Properties.
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(proptest_config())]

    /// Leader appends, markers, resets, HW moves, truncations and epoch bumps agree with the
    /// model after every operation, reads included.
    #[test]
    fn leader_matches_model(config in log_config(), pids in 2usize..=4, ops in ops(100)) {
        run(&config, pids, &ops);
    }

    /// A follower that appends the leader's batches in random chunks ends with the leader's
    /// producer state, aborted index, epoch cache and bytes; after every chunk its producer
    /// state equals the model's replay of the prefix it holds.
    #[test]
    fn follower_replica_matches_leader(
        config in log_config(),
        pids in 2usize..=4,
        ops in ops(60),
        chunks in prop::collection::vec(1usize..700, 1..40),
    ) {
        let leader = run(&config, pids, &ops);
        let mut follower = open_empty(&config);
        let mut chunk = chunks.iter().cycle();
        loop {
            let info = leader
                .log
                .read(follower.log_end_offset(), *chunk.next().unwrap(), FetchIsolation::LogEnd, true)
                .expect("the follower's LEO is within the leader's log");
            if info.batches.is_empty() {
                break;
            }
            follower.append_as_follower(&info.batches).expect("replicated batches append");
            let held: Vec<MBatch> = leader
                .model
                .batches
                .iter()
                .take_while(|b| b.next() <= follower.log_end_offset().0)
                .cloned()
                .collect();
            let ctx = format!("follower at {}", follower.log_end_offset());
            let replay = Derived::of(&held);
            check_producers(&ctx, &follower, &replay);
            assert_index_matches(&ctx, &aborted_index(&follower), &replay.index);
        }
        follower.update_high_watermark(leader.log.high_watermark());
        assert_same_replica("follower vs leader", &leader.log, &follower);
    }

    /// Reopening a flushed log from its disk restores the same state.
    #[test]
    fn reopen_after_flush_restores_state(config in log_config(), pids in 2usize..=4, ops in ops(60)) {
        let mut leader = run(&config, pids, &ops);
        leader.log.flush().expect("flush");
        leader.log.checkpoint_high_watermark().expect("checkpoint");
        let expected = leader.log;
        let disk = expected.disk().clone();
        let (reopened, report) = PartitionLog::open(disk, config.clone()).expect("reopen");
        prop_assert_eq!(report.truncation, None);
        assert_same_replica("reopened vs original", &expected, &reopened);
    }

    /// Recovery after a crash or a corrupted byte never panics and yields exactly the longest
    /// valid batch prefix, with the state a follower builds from that prefix.
    #[test]
    fn recovery_yields_valid_prefix(
        config in prop_oneof![3 => Just(300usize), 1 => Just(1usize << 20)]
            .prop_map(|segment_bytes| LogConfig { segment_bytes, ..LogConfig::default() }),
        pids in 2usize..=4,
        before in ops(40),
        after in ops(30),
        damage in damage(),
    ) {
        let mut h = run(&config, pids, &before);
        h.log.flush().expect("flush");
        h.log.checkpoint_high_watermark().expect("checkpoint");
        let flushed_leo = h.log.log_end_offset();
        let checkpointed_hw = h.log.high_watermark();
        for &(op, fraction) in after.iter().filter(|(op, _)| !op.is_truncation()) {
            h.apply(op);
            h.check(fraction);
        }
        let pre_batches: Vec<Bytes> = h.log.batches().map(|b| b.bytes().clone()).collect();
        let pre_leo = h.log.log_end_offset();
        let model = h.model.clone();
        let mut disk = h.log.into_disk();
        let contents: BTreeMap<String, Bytes> = disk
            .list_files()
            .into_iter()
            .map(|name| {
                let data = disk.read_file(&name).unwrap();
                (name, data)
            })
            .collect();
        match damage {
            Damage::Crash { kept, torn } => disk.crash(|name, tail| {
                let data = &contents[name];
                let durable = data.len() - tail;
                let kept = pick(tail + 1, kept);
                let corruption = torn.filter(|_| kept > 0).map(|(at, mask)| {
                    let first = contents.keys().find(|n| segment_base(n).is_some()) == Some(&name.to_string());
                    let position = steer_damage(data, durable + pick(kept, at), first);
                    (position - durable, mask)
                });
                TailFate { kept_bytes: kept, corruption }
            }),
            Damage::Corrupt { file, position, mask } => {
                let segments: Vec<&String> = contents
                    .iter()
                    .filter(|(name, data)| name.ends_with(".log") && !data.is_empty())
                    .map(|(name, _)| name)
                    .collect();
                if !segments.is_empty() {
                    let name = segments[pick(segments.len(), file)];
                    let data = &contents[name];
                    let first = contents.keys().find(|n| segment_base(n).is_some()) == Some(name);
                    let at = steer_damage(data, pick(data.len(), position), first);
                    prop_assert!(disk.corrupt_byte(name, at, mask));
                }
            }
        }
        let prefix = surviving_prefix(&disk);
        let (recovered, _report) = PartitionLog::open(disk, config.clone()).expect("recovery");
        // The survivors are the original batches, byte for byte.
        prop_assert!(prefix.len() <= pre_batches.len());
        prop_assert_eq!(&prefix[..], &pre_batches[..prefix.len()]);
        let leo = recovered.log_end_offset();
        prop_assert!(leo <= pre_leo, "recovered LEO {} above pre-crash LEO {}", leo, pre_leo);
        if matches!(damage, Damage::Crash { .. }) {
            prop_assert!(leo >= flushed_leo, "recovered LEO {} below flushed LEO {}", leo, flushed_leo);
        }
        prop_assert_eq!(recovered.high_watermark(), checkpointed_hw.min(leo));
        let mut follower = follower_of(&config, &prefix);
        follower.update_high_watermark(recovered.high_watermark());
        assert_same_replica(
            "recovered vs follower of the prefix",
            &follower,
            &recovered
        );
        // And the model's replay of the same prefix.
        let replay = Derived::of(&model.batches[..prefix.len()]);
        check_producers("recovered vs model", &recovered, &replay);
        prop_assert_eq!(aborted_index(&recovered), replay.index);
        // The recovered log takes new appends at its LEO.
        let mut recovered = recovered;
        let (recs, timestamps) = records_of(2, -1, 0, 1);
        let info = recovered
            .append_as_leader(&build_batch(None, &recs, &timestamps), LeaderEpoch(model.leader_epoch), AppendOrigin::Client, 1)
            .expect("append after recovery");
        prop_assert_eq!(info.first_offset, leo);
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic cases for the rules the random runs only hit by chance.
// ---------------------------------------------------------------------------------------------

fn produce(pid: usize, epoch: EpochChoice, seq: SeqChoice, txn: bool) -> Op {
    Op::Produce {
        pid,
        epoch,
        seq,
        txn: if txn {
            TxnChoice::Transactional
        } else {
            TxnChoice::Idempotent
        },
        records: 2,
    }
}

/// Sequences wrap at `i32::MAX`, retries inside the five-batch window are duplicates with the
/// original offsets, older ones are out of order.
#[test]
fn sequence_wrap_and_duplicate_window() {
    use EpochChoice::Keep;
    let mut ops = vec![(produce(0, Keep, SeqChoice::NearMax(2), false), 0)];
    for _ in 0..6 {
        ops.push((produce(0, Keep, SeqChoice::Next, false), 0));
    }
    for k in 0..RETRY_HISTORY {
        ops.push((produce(0, Keep, SeqChoice::Retry(k), false), 0));
    }
    let h = run(&LogConfig::default(), 2, &ops);
    let entry = &h.model.batches[0];
    assert_eq!(
        entry.kind,
        Kind::Data {
            pid: 1000,
            epoch: 0,
            first_seq: i32::MAX - 2,
            txn: false
        }
    );
    // Seven batches of two records, nothing appended by the retries.
    assert_eq!(h.log.log_end_offset(), Offset(14));
}

/// A reset makes a known producer unknown again: any epoch and sequence are accepted, and its
/// open transaction no longer holds the LSO.
#[test]
fn reset_forgets_producers_and_open_transactions() {
    use EpochChoice::*;
    let ops = vec![
        (produce(0, Exactly(3), SeqChoice::Next, true), 0),
        (produce(1, Keep, SeqChoice::Next, false), 0),
        (Op::HighWatermark(u16::MAX), 0),
        (Op::Reset, 0),
        (produce(0, Exactly(1), SeqChoice::Gap(3), false), 0),
        (Op::HighWatermark(u16::MAX), 0),
    ];
    let h = run(&LogConfig::default(), 2, &ops);
    assert_eq!(h.log.last_stable_offset(), h.log.high_watermark());
    assert_eq!(h.log.producer_state().producers().len(), 1);
}

/// A transaction committed at an offset the HW has not passed holds the LSO at its first offset
/// (§3.5); a later MIRROR_PID_RESET removes producer entries and open transactions
/// (kip1279-spec §5.3) but not that completed, unreplicated transaction.
#[test]
fn reset_keeps_unreplicated_txn_holding_lso() {
    let mut log = open_empty(&LogConfig::default());
    log.assign_epoch_start_offset(LeaderEpoch(0));
    let mut txn = BatchBuilder::idempotent(1000, 0, 0);
    txn.transactional = true;
    txn.append(1, None, Some(Bytes::from_static(b"x")), Vec::new());
    log.append_as_leader(&txn.build(), LeaderEpoch(0), AppendOrigin::Client, 1)
        .unwrap();
    let commit = end_transaction_marker(
        MarkerProducer {
            producer_id: 1000,
            producer_epoch: 0,
        },
        true,
        0,
        2,
    );
    log.append_as_leader(&commit, LeaderEpoch(0), AppendOrigin::Coordinator, 2)
        .unwrap();
    log.maybe_increment_high_watermark(Offset(1));
    assert_eq!(
        log.last_stable_offset(),
        Offset(0),
        "the unreplicated commit holds the LSO"
    );
    log.append_as_leader(
        &mirror_pid_reset("source", 3),
        LeaderEpoch(0),
        AppendOrigin::Coordinator,
        3,
    )
    .unwrap();
    assert_eq!(
        log.last_stable_offset(),
        Offset(0),
        "the commit marker at 1 is still not below the HW (1)"
    );
}

/// The leader writes ABORT(A)@1 with index LSO 2 (no other transaction open at the marker). A
/// follower that fetches offsets 0..4 in one call, and the same follower after a restart, must
/// record the same entry: the index LSO is computed in log order, not after all of a call's
/// transactions have started (which is what Kafka's `UnifiedLog.append` does).
#[test]
fn follower_index_lso_does_not_depend_on_fetch_chunking() {
    let config = LogConfig::default();
    let mut leader = open_empty(&config);
    leader.assign_epoch_start_offset(LeaderEpoch(0));
    let txn_batch = |pid: i64| {
        let mut b = BatchBuilder::idempotent(pid, 0, 0);
        b.transactional = true;
        b.append(1, None, Some(Bytes::from_static(b"x")), Vec::new());
        b.build()
    };
    let abort_a = end_transaction_marker(
        MarkerProducer {
            producer_id: 1000,
            producer_epoch: 0,
        },
        false,
        0,
        2,
    );
    let (plain, ts) = records_of(1, -1, 0, 3);
    leader
        .append_as_leader(&txn_batch(1000), LeaderEpoch(0), AppendOrigin::Client, 1)
        .unwrap();
    leader
        .append_as_leader(&abort_a, LeaderEpoch(0), AppendOrigin::Coordinator, 2)
        .unwrap();
    leader
        .append_as_leader(
            &build_batch(None, &plain, &ts),
            LeaderEpoch(0),
            AppendOrigin::Client,
            3,
        )
        .unwrap();
    leader
        .append_as_leader(&txn_batch(1001), LeaderEpoch(0), AppendOrigin::Client, 4)
        .unwrap();
    assert_eq!(aborted_index(&leader), vec![(1000, 0, 1, 2)]);

    let mut follower = open_empty(&config);
    let all = leader
        .read(Offset(0), 1 << 20, FetchIsolation::LogEnd, true)
        .unwrap();
    follower.append_as_follower(&all.batches).unwrap();
    let live = aborted_index(&follower);
    // The same replica restarted with the same bytes replays batch by batch.
    follower.flush().unwrap();
    let (restarted, _) = PartitionLog::open(follower.disk().clone(), config.clone()).unwrap();
    assert_eq!(
        live,
        aborted_index(&restarted),
        "the follower's index changes across a restart with an unchanged log"
    );
    assert_eq!(live, aborted_index(&leader), "one-chunk follower vs leader");
}

/// A single flipped bit in the base offset of the log's first batch (bytes 0..8, not covered by
/// the CRC) must not be trusted: segments are rolled at the log end and never compacted, so a
/// segment's first batch starts exactly at the segment's base offset. The valid prefix is empty.
#[test]
fn recovery_rejects_first_batch_with_corrupt_base_offset() {
    let config = LogConfig::default();
    let ops: Vec<(Op, u16)> = (0..3).map(|_| (Op::Plain { records: 2 }, 0)).collect();
    let mut h = run(&config, 2, &ops);
    h.log.flush().unwrap();
    let mut disk = h.log.into_disk();
    // Offset 0 becomes 64: byte 7 is the base offset's low byte.
    assert!(disk.corrupt_byte(&mirrorsim::log::segment_file_name(0), 7, 0x40));
    assert!(surviving_prefix(&disk).is_empty());
    let (recovered, _report) = PartitionLog::open(disk, config).unwrap();
    let kept: Vec<(i64, i64)> = recovered
        .batches()
        .map(|b| (b.base_offset(), b.last_offset()))
        .collect();
    assert_eq!(kept, vec![], "recovered batches");
    assert_eq!(recovered.log_end_offset(), Offset(0));
}

/// `flush()` fsyncs the segments and then checkpoints the high watermark, so a reopen restores
/// the HW (and with it the LSO and producer state's unreplicated transactions).
#[test]
fn flush_checkpoints_high_watermark() {
    let config = LogConfig::default();
    let ops = vec![
        (produce(0, EpochChoice::Keep, SeqChoice::Next, true), 0),
        (
            Op::Marker {
                pid: 0,
                commit: true,
                epoch: EpochChoice::Keep,
                coord_delta: 0,
            },
            0,
        ),
        (Op::HighWatermark(u16::MAX), 0),
    ];
    let mut h = run(&config, 2, &ops);
    h.log.flush().unwrap();
    let (reopened, _) = PartitionLog::open(h.log.disk().clone(), config).unwrap();
    assert_eq!(reopened.high_watermark(), h.log.high_watermark());
    assert_eq!(reopened.producer_state(), h.log.producer_state());
}
