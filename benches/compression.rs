//! Compressed-batch benchmark: prints figures, asserts nothing about speed.
//!
//! Run with `cargo bench --bench compression` (release profile). For each codec it builds
//! 2,000 batches of 50 records (values of repetitive text, as logs and JSON are) compressed the
//! way Kafka's producer writes them, and reports, in MiB of decompressed records per second:
//! 1. the raw decompression of every batch's payload (`record::decompress`, the codec crate
//!    plus Kafka's framing), the floor any reader pays;
//! 2. decode + CRC check + decompression + every record decoded (`BatchReader` and
//!    `RecordBatch::records`), what dump-log and a consumer pay;
//!
//! and the ratio of the two. Each figure is the best of five runs.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mirrorsim::record::{
    decompress, BatchBuilder, BatchReader, CompressionType, DEFAULT_DECOMPRESSED_LIMIT,
    RECORD_BATCH_OVERHEAD,
};

const BATCHES: usize = 2_000;
const RECORDS_PER_BATCH: usize = 50;
const RUNS: usize = 5;

fn main() {
    for codec in [
        CompressionType::None,
        CompressionType::Gzip,
        CompressionType::Snappy,
        CompressionType::Lz4,
        CompressionType::Zstd,
    ] {
        bench_codec(codec);
    }
}

fn bench_codec(codec: CompressionType) {
    let (segment, payloads, raw_bytes) = build_segment(codec);
    let megabytes = raw_bytes as f64 / (1024.0 * 1024.0);
    let raw = best_of(|| {
        for payload in &payloads {
            let records = decompress(codec, payload, DEFAULT_DECOMPRESSED_LIMIT);
            black_box(records.expect("valid payload"));
        }
    });
    let full = best_of(|| {
        let mut records = 0usize;
        for item in BatchReader::new(segment.clone(), 0) {
            let (_, batch) = item.expect("valid batch");
            for record in batch.records() {
                black_box(record.expect("valid record"));
                records += 1;
            }
        }
        assert_eq!(records, BATCHES * RECORDS_PER_BATCH);
    });
    println!(
        "{:<7} {:6.1} MiB records in {:6.1} MiB: raw decompression {:7.0} MiB/s, \
         decode + decompress + records {:7.0} MiB/s ({:.2}x the raw time)",
        codec.name(),
        megabytes,
        segment.len() as f64 / (1024.0 * 1024.0),
        megabytes / raw.as_secs_f64(),
        megabytes / full.as_secs_f64(),
        full.as_secs_f64() / raw.as_secs_f64(),
    );
}

/// The segment, each batch's compressed payload, and the total size of the records regions
/// before compression.
fn build_segment(codec: CompressionType) -> (Bytes, Vec<Vec<u8>>, usize) {
    let mut segment = Vec::new();
    let mut payloads = Vec::new();
    let mut raw_bytes = 0;
    let plain = |builder: &BatchBuilder| {
        let mut plain = builder.clone();
        plain.compression = CompressionType::None;
        plain.build().size_in_bytes() - RECORD_BATCH_OVERHEAD
    };
    for batch in 0..BATCHES {
        let mut builder = BatchBuilder::idempotent(1, 0, (batch * RECORDS_PER_BATCH) as i32);
        builder.compression = codec;
        for record in 0..RECORDS_PER_BATCH {
            let value = format!(
                "{{\"user\":\"user-{record:04}\",\"event\":\"page_view\",\"path\":\"/items/{batch}\",\
                 \"ms\":{}}}",
                batch * 1000 + record
            );
            builder.append(
                1_700_000_000_000 + record as i64,
                Some(Bytes::from(format!("key-{record}"))),
                Some(Bytes::from(value)),
                Vec::new(),
            );
        }
        raw_bytes += plain(&builder);
        let built = builder.build();
        payloads.push(built.bytes()[RECORD_BATCH_OVERHEAD..].to_vec());
        segment.extend_from_slice(built.bytes());
    }
    (Bytes::from(segment), payloads, raw_bytes)
}

fn best_of(mut run: impl FnMut()) -> Duration {
    (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .min()
        .expect("RUNS > 0")
}
