//! Storage benchmark: prints figures, asserts nothing about speed.
//!
//! Run with `cargo bench --bench storage` (release profile). It reports:
//! 1. decode + CRC-32C verification throughput over a large buffer of concatenated batches, and
//!    its ratio to raw `crc32c` over the same bytes (the floor any decoder must pay);
//! 2. the same with every record decoded too;
//! 3. producer-state append validation (validate + apply) in batches per second;
//! 4. full leader appends through `PartitionLog` on the in-memory disk, in batches per second.
//!
//! Each figure is the best of five runs, to keep scheduler noise out of the ratio.

use mirrorsim::common::{LeaderEpoch, Offset};
use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mirrorsim::log::{AppendOrigin, LogConfig, MemoryDisk, PartitionLog, ProducerStateManager};
use mirrorsim::record::{BatchBuilder, BatchReader, RecordBatch};

const BATCHES: usize = 100_000;
const RECORDS_PER_BATCH: usize = 10;
const PRODUCERS: i64 = 100;
const RUNS: usize = 5;

fn main() {
    let batches = build_batches();
    let stamped = stamp_offsets(&batches);
    let buffer = concatenate(&stamped);
    let megabytes = buffer.len() as f64 / (1024.0 * 1024.0);
    println!("buffer: {BATCHES} batches x {RECORDS_PER_BATCH} records = {megabytes:.1} MiB");

    let crc = best_of(|| {
        black_box(crc32c::crc32c(black_box(&buffer)));
    });
    let decode = best_of(|| {
        let mut count = 0;
        for item in BatchReader::new(buffer.clone(), 0) {
            black_box(item.expect("valid batch"));
            count += 1;
        }
        assert_eq!(count, BATCHES);
    });
    let decode_records = best_of(|| {
        let mut records = 0usize;
        for item in BatchReader::new(buffer.clone(), 0) {
            let (_, batch) = item.expect("valid batch");
            for record in batch.records() {
                black_box(record.expect("valid record"));
                records += 1;
            }
        }
        assert_eq!(records, BATCHES * RECORDS_PER_BATCH);
    });
    println!(
        "raw crc32c:                {:8.0} MiB/s",
        megabytes / crc.as_secs_f64()
    );
    println!(
        "decode + CRC check:        {:8.0} MiB/s  ({:.2}x the time of raw crc32c)",
        megabytes / decode.as_secs_f64(),
        decode.as_secs_f64() / crc.as_secs_f64()
    );
    println!(
        "decode + CRC + records:    {:8.0} MiB/s  ({:.2}x the time of raw crc32c)",
        megabytes / decode_records.as_secs_f64(),
        decode_records.as_secs_f64() / crc.as_secs_f64()
    );

    let validation = best_of(|| {
        let mut state = ProducerStateManager::new(Offset(0));
        for batch in &stamped {
            let mut validator = state.begin_append(AppendOrigin::Client);
            validator.append_batch(batch).expect("in-sequence batch");
            let update = validator.finish();
            state.apply(update, Offset(batch.last_offset()));
        }
        assert_eq!(state.producers().len(), PRODUCERS as usize);
    });
    println!(
        "producer-state validation: {:8.2} M batches/s ({PRODUCERS} producers)",
        BATCHES as f64 / validation.as_secs_f64() / 1e6
    );

    let appends = best_of(|| {
        let (mut log, _) =
            PartitionLog::open(MemoryDisk::new(), LogConfig::default()).expect("empty log");
        for batch in &batches {
            log.append_as_leader(batch, LeaderEpoch(0), AppendOrigin::Client, 0)
                .expect("in-sequence batch");
        }
        assert_eq!(
            log.log_end_offset(),
            Offset((BATCHES * RECORDS_PER_BATCH) as i64)
        );
    });
    println!(
        "leader append (log+disk):  {:8.2} M batches/s",
        BATCHES as f64 / appends.as_secs_f64() / 1e6
    );
}

/// Client batches from `PRODUCERS` idempotent producers, round robin, each in sequence.
fn build_batches() -> Vec<RecordBatch> {
    (0..BATCHES)
        .map(|index| {
            let producer_id = index as i64 % PRODUCERS;
            let batch_of_producer = (index as i64 / PRODUCERS) as i32;
            let mut builder = BatchBuilder::idempotent(
                producer_id,
                0,
                batch_of_producer * RECORDS_PER_BATCH as i32,
            );
            for record in 0..RECORDS_PER_BATCH {
                builder.append(
                    1_700_000_000_000 + record as i64,
                    Some(Bytes::from(format!("key-{record}"))),
                    Some(Bytes::from(vec![b'v'; 64])),
                    Vec::new(),
                );
            }
            builder.build()
        })
        .collect()
}

/// The batches as a leader would have stored them, with offsets assigned.
fn stamp_offsets(batches: &[RecordBatch]) -> Vec<RecordBatch> {
    let mut next_offset = 0i64;
    batches
        .iter()
        .map(|batch| {
            let stamped = batch.stamped_by_leader(next_offset, 0, None);
            next_offset = stamped.next_offset();
            stamped
        })
        .collect()
}

/// The stamped batches as one segment buffer.
fn concatenate(stamped: &[RecordBatch]) -> Bytes {
    let mut out = Vec::new();
    for (index, batch) in stamped.iter().enumerate() {
        debug_assert_eq!(batch.base_offset(), (index * RECORDS_PER_BATCH) as i64);
        out.extend_from_slice(batch.bytes());
    }
    Bytes::from(out)
}

fn best_of(mut run: impl FnMut()) -> Duration {
    (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .min()
        .expect("at least one run")
}
