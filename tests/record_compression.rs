//! Compressed RecordBatch v2 against fixtures written by independent implementations
//! (`tests/fixtures/compressed/`, made by its `generate.py`): kafka-python 3.0.12's builder in
//! each codec, the gzip, lz4 and zstd command-line tools, and Google's C++ snappy (raw block and
//! xerial framing). `expected.json` holds every field of every batch and record as
//! kafka-python's own decoder reads them.
//!
//! Contract checked here:
//! - every fixture batch decodes, with every header field and every record equal to the
//!   independent decoder's, and passes the record-level validation;
//! - a damaged compressed payload (any byte flipped, any truncation, with the CRC resealed so
//!   that the damage reaches the decompressor) is a typed error inside the batch, never a panic;
//! - a payload that declares a huge decompressed size is refused at the payload's first byte;
//! - batches the record layer compresses itself decode back to their records in every codec
//!   (proptest), and re-encoding a decoded compressed batch gives back the same records.

use std::collections::BTreeMap;
use std::path::PathBuf;

use bytes::Bytes;
use mirrorsim::record::{
    encode_batch, BatchBuilder, BatchReader, CompressionType, Record, RecordBatch, RecordErrorKind,
    RecordHeader, RECORD_BATCH_OVERHEAD,
};
use proptest::prelude::*;
use serde::Deserialize;

const FIXTURES: [&str; 9] = [
    "cli-gzip.log",
    "cli-lz4.log",
    "cli-zstd.log",
    "cpp-snappy.log",
    "kafka-python-gzip.log",
    "kafka-python-lz4.log",
    "kafka-python-snappy.log",
    "kafka-python-zstd.log",
    "mixed.log",
];
const CRC_FIELD: std::ops::Range<usize> = 17..21;
const CRC_START: usize = 21;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    #[allow(dead_code)]
    about: String,
    segments: BTreeMap<String, Vec<ExpectedBatch>>,
    record_sets: BTreeMap<String, Vec<ExpectedRecord>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedBatch {
    position: u64,
    size: usize,
    base_offset: i64,
    last_offset: i64,
    partition_leader_epoch: i32,
    magic: i8,
    crc: u32,
    attributes: i16,
    compression: u8,
    last_offset_delta: i32,
    first_timestamp: i64,
    max_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    last_sequence: i32,
    records_count: i32,
    is_transactional: bool,
    is_control: bool,
    records: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedRecord {
    offset: i64,
    timestamp: i64,
    key: Option<String>,
    value: Option<String>,
    headers: Vec<(String, Option<String>)>,
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/compressed"
    ))
}

fn load_expected() -> Expected {
    let path = fixture_dir().join("expected.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let expected: Expected = serde_json::from_str(&text).expect("expected.json parses");
    let names: Vec<&str> = expected.segments.keys().map(String::as_str).collect();
    assert_eq!(
        names, FIXTURES,
        "expected.json describes exactly the fixtures"
    );
    expected
}

fn read_fixture(name: &str) -> Bytes {
    let path = fixture_dir().join(name);
    Bytes::from(std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display())))
}

fn hex(bytes: &Option<Bytes>) -> Option<String> {
    bytes
        .as_ref()
        .map(|bytes| bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

fn segment_batches(name: &str) -> Vec<(u64, RecordBatch)> {
    BatchReader::new(read_fixture(name), 0)
        .collect::<Result<_, _>>()
        .unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn check_header(name: &str, position: u64, batch: &RecordBatch, expected: &ExpectedBatch) {
    let header = batch.header();
    let at = format!("{name} batch at {position}");
    assert_eq!(position, expected.position, "{at}");
    assert_eq!(batch.size_in_bytes(), expected.size, "{at}: size");
    assert_eq!(header.base_offset, expected.base_offset, "{at}");
    assert_eq!(batch.last_offset(), expected.last_offset, "{at}");
    assert_eq!(
        header.partition_leader_epoch,
        expected.partition_leader_epoch
    );
    assert_eq!(header.magic, expected.magic, "{at}");
    assert_eq!(header.crc, expected.crc, "{at}");
    assert_eq!(header.attributes, expected.attributes, "{at}");
    assert_eq!(header.compression().id(), expected.compression, "{at}");
    assert_eq!(header.last_offset_delta, expected.last_offset_delta, "{at}");
    assert_eq!(header.base_timestamp, expected.first_timestamp, "{at}");
    assert_eq!(header.max_timestamp, expected.max_timestamp, "{at}");
    assert_eq!(header.producer_id, expected.producer_id, "{at}");
    assert_eq!(header.producer_epoch, expected.producer_epoch, "{at}");
    assert_eq!(header.base_sequence, expected.base_sequence, "{at}");
    assert_eq!(header.last_sequence(), expected.last_sequence, "{at}");
    assert_eq!(header.records_count, expected.records_count, "{at}");
    assert_eq!(header.is_transactional(), expected.is_transactional, "{at}");
    assert_eq!(header.is_control(), expected.is_control, "{at}");
}

fn check_records(name: &str, records: &[Record], expected: &[ExpectedRecord]) {
    assert_eq!(records.len(), expected.len(), "{name}: record count");
    for (record, want) in records.iter().zip(expected) {
        let at = format!("{name} offset {}", want.offset);
        assert_eq!(record.offset, want.offset, "{at}");
        assert_eq!(record.timestamp, want.timestamp, "{at}");
        assert_eq!(hex(&record.key), want.key, "{at}: key");
        assert_eq!(hex(&record.value), want.value, "{at}: value");
        let headers: Vec<(String, Option<String>)> = record
            .headers
            .iter()
            .map(|header| (header.key.clone(), hex(&header.value)))
            .collect();
        assert_eq!(headers, want.headers, "{at}: headers");
    }
}

#[test]
fn every_fixture_batch_and_record_matches_the_independent_decoder() {
    let expected = load_expected();
    let mut codecs_seen = std::collections::BTreeSet::new();
    for (name, batches) in &expected.segments {
        let decoded = segment_batches(name);
        assert_eq!(decoded.len(), batches.len(), "{name}: batch count");
        for ((position, batch), want) in decoded.iter().zip(batches) {
            check_header(name, *position, batch, want);
            let mut records = Vec::new();
            batch
                .validate_records_with(*position, |record| records.push(record.clone()))
                .unwrap_or_else(|error| panic!("{name}: {error}"));
            check_records(name, &records, &expected.record_sets[&want.records]);
            codecs_seen.insert(want.compression);
        }
    }
    assert_eq!(
        codecs_seen.into_iter().collect::<Vec<_>>(),
        [0, 1, 2, 3, 4],
        "the fixtures cover every codec"
    );
}

#[test]
fn reencoding_a_decoded_compressed_batch_keeps_its_records() {
    for name in FIXTURES {
        for (_, batch) in segment_batches(name) {
            let records: Vec<Record> = batch.records().collect::<Result<_, _>>().unwrap();
            let reencoded = encode_batch(batch.header(), &records);
            assert_eq!(reencoded.header().attributes, batch.header().attributes);
            let again: Vec<Record> = reencoded.records().collect::<Result<_, _>>().unwrap();
            assert_eq!(again, records, "{name}");
            if batch.header().compression() == CompressionType::None {
                assert_eq!(reencoded.bytes(), batch.bytes(), "{name}");
            }
        }
    }
}

/// The first batch of `name` with `damage` applied to its bytes and the CRC resealed, so that
/// the damage reaches the decompressor instead of stopping at the CRC check.
fn damaged_first_batch(name: &str, damage: impl FnOnce(&mut Vec<u8>)) -> Bytes {
    let (_, batch) = segment_batches(name).remove(0);
    let mut bytes = batch.bytes().to_vec();
    damage(&mut bytes);
    let length = (bytes.len() - 12) as i32;
    bytes[8..12].copy_from_slice(&length.to_be_bytes());
    let crc = crc32c::crc32c(&bytes[CRC_START..]);
    bytes[CRC_FIELD].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(bytes)
}

/// Decodes a damaged batch and reads all its records: whatever happens must be an error inside
/// the records region (or at its end, for a stream cut short) or valid records, never a panic.
fn read_damaged(name: &str, bytes: Bytes) -> Result<usize, RecordErrorKind> {
    let size = bytes.len() as u64;
    let batch = RecordBatch::decode(&bytes, 0).unwrap_or_else(|error| panic!("{name}: {error}"));
    let mut count = 0;
    batch
        .validate_records_with(0, |_| count += 1)
        .map(|()| count)
        .map_err(|error| {
            assert!(
                (RECORD_BATCH_OVERHEAD as u64..=size).contains(&error.position),
                "{name}: error outside the records region: {error}"
            );
            error.kind
        })
}

#[test]
fn every_flipped_payload_byte_is_an_error_or_valid_records_never_a_panic() {
    for name in FIXTURES.iter().filter(|name| !name.starts_with("mixed")) {
        let size = segment_batches(name)[0].1.size_in_bytes();
        let mut errors = 0;
        for at in RECORD_BATCH_OVERHEAD..size {
            let bytes = damaged_first_batch(name, |bytes| bytes[at] ^= 0x5a);
            if read_damaged(name, bytes).is_err() {
                errors += 1;
            }
        }
        let flips = size - RECORD_BATCH_OVERHEAD;
        // A codec without checksums (kafka-python's lz4 and zstd frames, zstd --no-check)
        // cannot tell a flipped literal from data, so such flips may only change a value. The
        // lz4 tool's frame has block and content checksums: every flip must be caught there.
        if *name == "cli-lz4.log" {
            assert_eq!(errors, flips, "{name}: every flip is caught");
        } else {
            assert!(errors > 0, "{name}: no flip of {flips} was caught");
        }
    }
}

#[test]
fn every_truncated_payload_is_a_typed_error() {
    for name in FIXTURES.iter().filter(|name| !name.starts_with("mixed")) {
        let size = segment_batches(name)[0].1.size_in_bytes();
        for cut in RECORD_BATCH_OVERHEAD + 1..size {
            let bytes = damaged_first_batch(name, |bytes| bytes.truncate(cut));
            let kind = read_damaged(name, bytes).expect_err("a truncated stream is an error");
            assert!(
                matches!(
                    kind,
                    RecordErrorKind::Decompression { .. } | RecordErrorKind::CorruptRecord(_)
                ),
                "{name} cut at {cut}: {kind:?}"
            );
        }
    }
}

#[test]
fn a_declared_bomb_is_refused_at_the_payload_start() {
    // A raw snappy block whose length varint claims 4 GiB: refused before any allocation.
    let bytes = damaged_first_batch("cpp-snappy.log", |bytes| {
        bytes.truncate(RECORD_BATCH_OVERHEAD);
        bytes.extend([0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]);
    });
    let batch = RecordBatch::decode(&bytes, 1000).expect("header and CRC are fine");
    let error = batch.records_at(1000).next().unwrap().expect_err("bomb");
    assert_eq!(error.position, 1000 + RECORD_BATCH_OVERHEAD as u64);
    assert!(matches!(
        error.kind,
        RecordErrorKind::DecompressedTooLarge {
            codec: "snappy",
            ..
        }
    ));
}

#[test]
fn an_unknown_codec_is_refused_by_decode_and_shown_by_inspect() {
    let bytes = damaged_first_batch("kafka-python-gzip.log", |bytes| bytes[22] |= 0x07);
    let error = RecordBatch::decode(&bytes, 0).expect_err("codec 7");
    assert_eq!(error.position, 21);
    let inspected = RecordBatch::inspect(&bytes, 0).expect("inspect shows the header");
    assert!(inspected.crc_valid());
    assert_eq!(
        inspected.batch.header().compression(),
        CompressionType::Unknown(7)
    );
    let error = inspected
        .batch
        .records()
        .next()
        .unwrap()
        .expect_err("codec 7");
    assert!(matches!(
        error.kind,
        RecordErrorKind::UnsupportedCompression(_)
    ));
}

const CODECS: [CompressionType; 5] = [
    CompressionType::None,
    CompressionType::Gzip,
    CompressionType::Snappy,
    CompressionType::Lz4,
    CompressionType::Zstd,
];

type RecordSpec = (
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

fn record_spec() -> impl Strategy<Value = RecordSpec> {
    let bytes = || prop::option::of(prop::collection::vec(any::<u8>(), 0..300));
    (
        0i64..100_000,
        bytes(),
        bytes(),
        prop::collection::vec(("[a-z]{0,8}", bytes()), 0..3),
    )
}

proptest! {
    #[test]
    fn built_compressed_batches_decode_to_their_records(
        codec in prop::sample::select(&CODECS[..]),
        specs in prop::collection::vec(record_spec(), 1..40),
        transactional in any::<bool>(),
    ) {
        let mut builder = BatchBuilder::idempotent(42, 1, 7);
        builder.compression = codec;
        builder.transactional = transactional;
        for (delta, key, value, headers) in &specs {
            let headers = headers
                .iter()
                .map(|(key, value)| RecordHeader {
                    key: key.clone(),
                    value: value.clone().map(Bytes::from),
                })
                .collect();
            builder.append(
                1_700_000_000_000 + delta,
                key.clone().map(Bytes::from),
                value.clone().map(Bytes::from),
                headers,
            );
        }
        let built = builder.build();
        let decoded = RecordBatch::decode_exact(built.bytes().clone())
            .map_err(|error| TestCaseError::fail(error.to_string()))?;
        prop_assert_eq!(decoded.header().compression(), codec);
        prop_assert_eq!(decoded.is_transactional(), transactional);
        let records: Vec<Record> = decoded.records().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(records.len(), specs.len());
        for (index, (record, (delta, key, value, headers))) in records.iter().zip(&specs).enumerate() {
            prop_assert_eq!(record.offset, index as i64);
            prop_assert_eq!(record.sequence, 7 + index as i32);
            prop_assert_eq!(record.timestamp, 1_700_000_000_000 + delta);
            prop_assert_eq!(record.key.as_deref(), key.as_deref());
            prop_assert_eq!(record.value.as_deref(), value.as_deref());
            prop_assert_eq!(record.headers.len(), headers.len());
        }
    }
}
