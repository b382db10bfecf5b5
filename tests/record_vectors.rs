//! Cross-validation of the RecordBatch v2 codec against the byte-exact vectors in
//! `tests/vectors/record-batches.json` (kafka-storage.md §7.2), plus the codec rules those vectors
//! pin down.
//!
//! Contract checked here:
//! - every vector decodes with [`RecordBatch::decode_exact`] to exactly the header fields and
//!   records the JSON lists, and re-encodes through [`encode_batch`] to the same bytes;
//! - the CRC-32C covers bytes `[21, end)`: any single-bit flip there is a `CrcMismatch`, while the
//!   base offset (bytes 0..8) and partition leader epoch (bytes 12..16) may change freely;
//! - every truncation is a typed error, never a panic; compression bits over plain records are
//!   a typed error in the records region (real compressed batches: `tests/record_compression.rs`);
//! - LogAppendTime batches report the batch max timestamp for every record;
//! - the control-batch builders produce Kafka's markers and design.md §6's `MIRROR_PID_RESET`
//!   byte for byte;
//! - random batches (proptest) round-trip through encode and decode and detect random bit flips.

use std::collections::BTreeMap;

use bytes::Bytes;
use mirrorsim::record::{
    encode_batch, end_transaction_marker, increment_sequence, mirror_pid_reset,
    parse_control_record, BatchBuilder, BatchHeader, ControlRecord, MarkerProducer, Record,
    RecordBatch, RecordErrorKind, RecordHeader, TimestampType, NO_SEQUENCE, RECORD_BATCH_OVERHEAD,
};
use proptest::prelude::*;
use serde::Deserialize;

/// `T0` of the vectors: 1700000000000 ms.
const T0: i64 = 1_700_000_000_000;
/// First byte covered by the CRC (the attributes field).
const CRC_START: usize = 21;
/// Bytes 17..21 hold the CRC.
const CRC_FIELD: std::ops::Range<usize> = 17..21;
/// Bytes 21..23 hold the attributes.
const ATTRIBUTES_FIELD: std::ops::Range<usize> = 21..23;
/// Every vector the file must contain; a vector missing from the file fails the tests instead of
/// being skipped silently.
const VECTOR_NAMES: [&str; 7] = ["v1", "v1_kp_native", "v2", "v3", "v4", "v5", "v6"];

/// One vector as the JSON file describes it. Unknown fields are rejected so that a field added
/// to the file cannot go unchecked.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Vector {
    name: String,
    size: usize,
    hex: String,
    crc_field: String,
    crc_valid: bool,
    crc_recomputed: String,
    base_offset: i64,
    length_field: i32,
    ple: i32,
    magic: i8,
    attributes: String,
    last_offset_delta: i32,
    first_ts: i64,
    max_ts: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    records_count: i32,
    is_transactional: bool,
    is_control: bool,
    records: Vec<VectorRecord>,
}

/// One record of a vector; keys, values and header values are hex, `null` for null.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VectorRecord {
    offset: i64,
    timestamp: i64,
    key: Option<String>,
    value: Option<String>,
    headers: Vec<(String, Option<String>)>,
    control_version: Option<i16>,
    control_type: Option<i16>,
}

/// The whole vector file.
struct VectorFile {
    crc32c_check: u32,
    vectors: BTreeMap<String, Vector>,
}

fn load_vectors() -> VectorFile {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/record-batches.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let mut document: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&text).expect("vector file is a JSON object");
    let crc32c_check = document
        .remove("crc32c_check_123456789")
        .and_then(|value| value.as_str().map(parse_hex_u32))
        .expect("crc32c_check_123456789 is a hex string");
    document.remove("about");
    let vectors: BTreeMap<String, Vector> = document
        .into_iter()
        .map(|(name, value)| {
            let vector = serde_json::from_value(value)
                .unwrap_or_else(|error| panic!("vector {name}: {error}"));
            (name, vector)
        })
        .collect();
    let names: Vec<&str> = vectors.keys().map(String::as_str).collect();
    let mut expected = VECTOR_NAMES.to_vec();
    expected.sort_unstable();
    assert_eq!(
        names, expected,
        "the vector file holds exactly these vectors"
    );
    VectorFile {
        crc32c_check,
        vectors,
    }
}

fn hex_to_bytes(hex: &str) -> Vec<u8> {
    assert!(hex.len() % 2 == 0, "odd-length hex {hex:?}");
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).expect("hex digit"))
        .collect()
}

fn parse_hex_u32(text: &str) -> u32 {
    u32::from_str_radix(text.trim_start_matches("0x"), 16).expect("0x-prefixed hex")
}

fn parse_hex_i16(text: &str) -> i16 {
    u16::from_str_radix(text.trim_start_matches("0x"), 16).expect("0x-prefixed hex") as i16
}

fn optional_hex(hex: Option<&str>) -> Option<Bytes> {
    hex.map(|hex| Bytes::from(hex_to_bytes(hex)))
}

fn vector_bytes(vector: &Vector) -> Bytes {
    Bytes::from(hex_to_bytes(&vector.hex))
}

fn decode_vector(name: &str, vector: &Vector) -> RecordBatch {
    RecordBatch::decode_exact(vector_bytes(vector))
        .unwrap_or_else(|error| panic!("{name} ({}) must decode: {error}", vector.name))
}

fn decoded_records(batch: &RecordBatch) -> Vec<Record> {
    batch
        .records()
        .collect::<Result<_, _>>()
        .expect("a batch that passed decode_exact has valid records")
}

/// Rewrites the CRC field so that a deliberately modified batch passes the CRC check.
fn reseal_crc(bytes: &mut [u8]) {
    let crc = crc32c::crc32c(&bytes[CRC_START..]);
    bytes[CRC_FIELD].copy_from_slice(&crc.to_be_bytes());
}

#[test]
fn crc32c_check_value_matches_the_vector_file() {
    let file = load_vectors();
    assert_eq!(file.crc32c_check, 0xe306_9283);
    assert_eq!(crc32c::crc32c(b"123456789"), file.crc32c_check);
}

#[test]
fn vectors_decode_every_header_field() {
    for (name, vector) in &load_vectors().vectors {
        let batch = decode_vector(name, vector);
        let header = batch.header();
        assert!(
            vector.crc_valid,
            "{name}: the file lists only valid batches"
        );
        assert_eq!(vector.size, vector.hex.len() / 2, "{name}: size");
        assert_eq!(batch.size_in_bytes(), vector.size, "{name}: size");
        assert_eq!(header.size_in_bytes(), vector.size, "{name}: size");
        assert_eq!(
            header.base_offset, vector.base_offset,
            "{name}: base_offset"
        );
        assert_eq!(header.batch_length, vector.length_field, "{name}: length");
        assert_eq!(header.partition_leader_epoch, vector.ple, "{name}: ple");
        assert_eq!(header.magic, vector.magic, "{name}: magic");
        let attributes = parse_hex_i16(&vector.attributes);
        assert_eq!(header.attributes, attributes, "{name}: attributes");
        assert_eq!(header.crc, parse_hex_u32(&vector.crc_field), "{name}: crc");
        let recomputed = crc32c::crc32c(&batch.bytes()[CRC_START..]);
        assert_eq!(
            recomputed,
            parse_hex_u32(&vector.crc_recomputed),
            "{name}: crc"
        );
        assert_eq!(header.last_offset_delta, vector.last_offset_delta, "{name}");
        assert_eq!(header.base_timestamp, vector.first_ts, "{name}: first_ts");
        assert_eq!(header.max_timestamp, vector.max_ts, "{name}: max_ts");
        assert_eq!(
            header.producer_id, vector.producer_id,
            "{name}: producer_id"
        );
        assert_eq!(
            header.producer_epoch, vector.producer_epoch,
            "{name}: epoch"
        );
        assert_eq!(
            header.base_sequence, vector.base_sequence,
            "{name}: base_sequence"
        );
        assert_eq!(header.records_count, vector.records_count, "{name}: count");
        assert_eq!(header.is_transactional(), vector.is_transactional, "{name}");
        assert_eq!(batch.is_transactional(), vector.is_transactional, "{name}");
        assert_eq!(header.is_control(), vector.is_control, "{name}");
        assert_eq!(batch.is_control(), vector.is_control, "{name}");
        assert_eq!(header.timestamp_type(), TimestampType::CreateTime, "{name}");
        assert_eq!(header.compression().codec_name(), None, "{name}");
        assert_eq!(header.delete_horizon_ms(), None, "{name}");
        assert_eq!(
            batch.last_offset(),
            vector.base_offset + i64::from(vector.last_offset_delta),
            "{name}: last offset"
        );
    }
}

#[test]
fn vectors_decode_every_record_field() {
    for (name, vector) in &load_vectors().vectors {
        let batch = decode_vector(name, vector);
        let records = decoded_records(&batch);
        assert_eq!(records.len(), vector.records.len(), "{name}: record count");
        for (index, (record, expected)) in records.iter().zip(&vector.records).enumerate() {
            let at = format!("{name} record {index}");
            assert_eq!(record.offset, expected.offset, "{at}: offset");
            assert_eq!(record.timestamp, expected.timestamp, "{at}: timestamp");
            assert_eq!(
                record.key,
                optional_hex(expected.key.as_deref()),
                "{at}: key"
            );
            assert_eq!(
                record.value,
                optional_hex(expected.value.as_deref()),
                "{at}: value"
            );
            let headers: Vec<(String, Option<Bytes>)> = expected
                .headers
                .iter()
                .map(|(key, value)| (key.clone(), optional_hex(value.as_deref())))
                .collect();
            let decoded: Vec<(String, Option<Bytes>)> = record
                .headers
                .iter()
                .map(|header| (header.key.clone(), header.value.clone()))
                .collect();
            assert_eq!(decoded, headers, "{at}: headers");
            let sequence = if vector.base_sequence < 0 {
                NO_SEQUENCE
            } else {
                increment_sequence(vector.base_sequence, record.offset_delta)
            };
            assert_eq!(record.sequence, sequence, "{at}: sequence");
        }
    }
}

#[test]
fn vectors_decode_control_records_from_the_key() {
    let file = load_vectors();
    let mut control_vectors = 0;
    for (name, vector) in &file.vectors {
        let batch = decode_vector(name, vector);
        let first = vector.records.first().expect("every vector has records");
        let (Some(version), Some(type_id)) = (first.control_version, first.control_type) else {
            assert!(!vector.is_control, "{name}: a control batch names its type");
            assert!(batch.control_record().is_none(), "{name}: data batch");
            continue;
        };
        control_vectors += 1;
        let record = &decoded_records(&batch)[0];
        let key = record.key.as_deref().expect("control records have a key");
        assert_eq!(i16::from_be_bytes([key[0], key[1]]), version, "{name}");
        let parsed = parse_control_record(key, record.value.as_deref())
            .unwrap_or_else(|reason| panic!("{name}: {reason}"));
        assert_eq!(parsed.record_type().id(), type_id, "{name}: control type");
        let from_batch = batch
            .control_record()
            .expect("control batch")
            .expect("valid");
        assert_eq!(from_batch, parsed, "{name}");
        // Both markers in the file carry the coordinator epoch in their value.
        let coordinator_epoch =
            i32::from_be_bytes(record.value.as_deref().unwrap()[2..6].try_into().unwrap());
        assert_eq!(
            parsed,
            ControlRecord::EndTransaction {
                committed: type_id == 1,
                coordinator_epoch
            },
            "{name}"
        );
        assert!(!batch.is_mirror_pid_reset(), "{name}");
    }
    assert_eq!(control_vectors, 2, "v3 (COMMIT) and v4 (ABORT)");
}

#[test]
fn vectors_reencode_byte_identical() {
    for (name, vector) in &load_vectors().vectors {
        let batch = decode_vector(name, vector);
        let reencoded = encode_batch(batch.header(), &decoded_records(&batch));
        assert_eq!(reencoded.bytes(), &vector_bytes(vector), "{name}");
        assert_eq!(reencoded.header(), batch.header(), "{name}");
    }
}

#[test]
fn single_bit_flip_in_crc_covered_bytes_is_a_crc_mismatch() {
    for (name, vector) in &load_vectors().vectors {
        let original = hex_to_bytes(&vector.hex);
        let stored = parse_hex_u32(&vector.crc_field);
        for byte in CRC_START..original.len() {
            for bit in 0..8 {
                let mut corrupt = original.clone();
                corrupt[byte] ^= 1 << bit;
                let error = RecordBatch::decode_exact(Bytes::from(corrupt))
                    .expect_err("a flipped bit must be detected");
                match error.kind {
                    RecordErrorKind::CrcMismatch {
                        stored: reported,
                        computed,
                    } => {
                        assert_eq!(reported, stored, "{name} byte {byte} bit {bit}");
                        assert_ne!(computed, stored, "{name} byte {byte} bit {bit}");
                    }
                    other => panic!("{name} byte {byte} bit {bit}: {other:?}"),
                }
                assert_eq!(error.position, CRC_FIELD.start as u64, "{name}");
            }
        }
    }
}

#[test]
fn base_offset_and_leader_epoch_are_outside_the_crc() {
    for (name, vector) in &load_vectors().vectors {
        let original = hex_to_bytes(&vector.hex);
        for byte in (0..8).chain(12..16) {
            for bit in 0..8 {
                let mut changed = original.clone();
                changed[byte] ^= 1 << bit;
                let batch = RecordBatch::decode_exact(Bytes::from(changed.clone()))
                    .unwrap_or_else(|error| panic!("{name} byte {byte} bit {bit}: {error}"));
                assert_eq!(
                    batch.header().crc,
                    parse_hex_u32(&vector.crc_field),
                    "{name}"
                );
                let base_offset = i64::from_be_bytes(changed[0..8].try_into().unwrap());
                let epoch = i32::from_be_bytes(changed[12..16].try_into().unwrap());
                assert_eq!(batch.base_offset(), base_offset, "{name}");
                assert_eq!(batch.partition_leader_epoch(), epoch, "{name}");
            }
        }
        // The leader-stamping helpers rewrite the same bytes and leave the CRC alone.
        let stamped = decode_vector(name, vector)
            .with_base_offset(1_000_000)
            .with_partition_leader_epoch(42);
        let redecoded = RecordBatch::decode_exact(stamped.bytes().clone()).expect("valid CRC");
        assert_eq!(redecoded.base_offset(), 1_000_000, "{name}");
        assert_eq!(redecoded.partition_leader_epoch(), 42, "{name}");
        assert_eq!(&redecoded.bytes()[16..], &original[16..], "{name}");
        let first = decoded_records(&redecoded)[0].offset;
        assert_eq!(
            first, 1_000_000,
            "{name}: record offsets follow the base offset"
        );
    }
}

#[test]
fn a_rewritten_producer_id_gets_a_recomputed_crc_and_nothing_else_changes() {
    // The rejected `pid-rewrite` design: producer id −(pid+2), CRC recomputed (spec §9 S-2).
    for (name, vector) in &load_vectors().vectors {
        let original = decode_vector(name, vector);
        let producer_id = -(original.header().producer_id + 2);
        let rewritten = original.with_producer_id(producer_id);
        let redecoded = RecordBatch::decode_exact(rewritten.bytes().clone())
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(redecoded.header().producer_id, producer_id, "{name}");
        assert_eq!(redecoded.header(), rewritten.header(), "{name}");
        // −(−1+2) = −1: a batch without a producer keeps its bytes.
        if producer_id != original.header().producer_id {
            assert_ne!(redecoded.header().crc, original.header().crc, "{name}");
        }
        let (before, after) = (original.bytes(), redecoded.bytes());
        assert_eq!(before.len(), after.len(), "{name}");
        let changed: Vec<usize> = (0..before.len())
            .filter(|&i| before[i] != after[i])
            .collect();
        assert!(
            changed
                .iter()
                .all(|i| (17..21).contains(i) || (43..51).contains(i)),
            "{name}: bytes {changed:?} changed outside the CRC and the producer id"
        );
        assert_eq!(
            decoded_records(&redecoded),
            decoded_records(&original),
            "{name}"
        );
    }
}

#[test]
fn truncation_at_every_length_is_a_typed_error() {
    for (name, vector) in &load_vectors().vectors {
        let bytes = vector_bytes(vector);
        for length in 0..vector.size {
            let error = RecordBatch::decode_exact(bytes.slice(..length))
                .expect_err("a truncated batch must not decode");
            let needed = if length < RECORD_BATCH_OVERHEAD {
                RECORD_BATCH_OVERHEAD
            } else {
                vector.size
            };
            match error.kind {
                RecordErrorKind::Truncated {
                    needed: reported,
                    available,
                } => {
                    assert_eq!(reported, needed as u64, "{name} at {length}");
                    assert_eq!(available, length as u64, "{name} at {length}");
                }
                RecordErrorKind::InvalidBatchLength(_) => {}
                other => panic!("{name} truncated to {length}: {other:?}"),
            }
        }
    }
}

#[test]
fn compression_bits_over_plain_records_are_a_typed_error() {
    // A codec id on records that were never compressed: the payload does not decompress (or
    // decompresses to garbage), an error inside the records region, never a panic. Ids 5-7
    // name no codec and are refused at the attributes.
    for (name, vector) in &load_vectors().vectors {
        let original = hex_to_bytes(&vector.hex);
        for bits in 1i16..=5 {
            let mut compressed = original.clone();
            let attributes = parse_hex_i16(&vector.attributes) | bits;
            compressed[ATTRIBUTES_FIELD].copy_from_slice(&attributes.to_be_bytes());
            reseal_crc(&mut compressed);
            let error = RecordBatch::decode_exact(Bytes::from(compressed))
                .expect_err("plain records under a codec id do not decode");
            if bits == 5 {
                assert_eq!(
                    error.kind,
                    RecordErrorKind::UnsupportedCompression("unknown codec"),
                    "{name}"
                );
                assert_eq!(error.position, ATTRIBUTES_FIELD.start as u64, "{name}");
            } else {
                assert!(
                    matches!(
                        error.kind,
                        RecordErrorKind::Decompression { .. } | RecordErrorKind::CorruptRecord(_)
                    ),
                    "{name} codec {bits}: {error}"
                );
                assert!(
                    error.position >= RECORD_BATCH_OVERHEAD as u64,
                    "{name} codec {bits}: {error}"
                );
            }
        }
    }
}

#[test]
fn log_append_time_reports_the_batch_max_timestamp_for_every_record() {
    let append_time = T0 + 60_000;
    // `BatchBuilder` has a private record list, so its public fields are set after construction.
    let mut builder = BatchBuilder::idempotent(1000, 0, 0);
    builder.log_append_time_ms = Some(append_time);
    for (delta, key) in [(0, "a"), (7, "b"), (3, "c")] {
        builder.append(T0 + delta, Some(Bytes::from(key)), None, Vec::new());
    }
    let built = builder.build();
    let batch = RecordBatch::decode_exact(built.bytes().clone()).expect("valid batch");
    assert_eq!(
        batch.header().timestamp_type(),
        TimestampType::LogAppendTime
    );
    assert_eq!(batch.header().attributes & 0x08, 0x08);
    assert_eq!(batch.header().max_timestamp, append_time);
    let records = decoded_records(&batch);
    assert_eq!(records.len(), 3);
    for record in &records {
        assert_eq!(record.timestamp, append_time, "offset {}", record.offset);
    }
    // The stored deltas still hold the producer's timestamps; only the read rule changes.
    let deltas: Vec<i64> = records
        .iter()
        .map(|record| record.timestamp_delta)
        .collect();
    assert_eq!(deltas, [0, 7, 3]);
}

#[test]
fn mirror_pid_reset_has_the_design_encoding() {
    let batch = mirror_pid_reset("cluster-a", T0);
    let bytes = batch.bytes();
    assert_eq!(&bytes[21..23], &[0x00, 0x20], "control, not transactional");
    assert_eq!(&bytes[43..51], &(-1i64).to_be_bytes(), "producer id");
    assert_eq!(&bytes[51..53], &(-1i16).to_be_bytes(), "producer epoch");
    assert_eq!(&bytes[53..57], &(-1i32).to_be_bytes(), "base sequence");
    assert_eq!(&bytes[57..61], &1i32.to_be_bytes(), "one record");
    assert_eq!(&bytes[27..35], &T0.to_be_bytes(), "base timestamp");
    assert_eq!(&bytes[35..43], &T0.to_be_bytes(), "max timestamp");
    // The single record, byte by byte: length varint (a 23-byte body, zigzag 0x2e), attributes,
    // timestamp delta, offset delta, key (length 4, version 0, type 7), value (length 13,
    // version 0, int16 length 9, "cluster-a"), header count 0.
    let mut record = vec![0x2e, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x07, 0x1a];
    record.extend_from_slice(&[0x00, 0x00, 0x00, 0x09]);
    record.extend_from_slice(b"cluster-a");
    record.push(0x00);
    assert_eq!(&bytes[RECORD_BATCH_OVERHEAD..], &record[..]);
    assert_eq!(batch.size_in_bytes(), RECORD_BATCH_OVERHEAD + record.len());

    let decoded = RecordBatch::decode_exact(bytes.clone()).expect("valid batch");
    assert!(decoded.is_control() && !decoded.is_transactional());
    assert!(decoded.is_mirror_pid_reset());
    assert_eq!(
        decoded.control_record(),
        Some(Ok(ControlRecord::MirrorPidReset {
            source_cluster_id: "cluster-a".to_string()
        }))
    );
    let records = decoded_records(&decoded);
    assert_eq!(records[0].key.as_deref(), Some(&[0, 0, 0, 7][..]));
}

#[test]
fn end_transaction_marker_reproduces_abort_vector_v4() {
    let file = load_vectors();
    let producer = MarkerProducer {
        producer_id: 1000,
        producer_epoch: 0,
    };
    let abort = end_transaction_marker(producer, false, 0, T0);
    assert_eq!(abort.bytes(), &vector_bytes(&file.vectors["v4"]));
}

#[test]
fn end_transaction_marker_reproduces_commit_vector_v3_after_leader_stamping() {
    let file = load_vectors();
    let producer = MarkerProducer {
        producer_id: 1000,
        producer_epoch: 0,
    };
    let commit = end_transaction_marker(producer, true, 5, T0 + 10)
        .with_base_offset(2)
        .with_partition_leader_epoch(0);
    assert_eq!(commit.bytes(), &vector_bytes(&file.vectors["v3"]));
    assert_eq!(commit.header().base_offset, 2);
    assert_eq!(commit.header().partition_leader_epoch, 0);
}

#[test]
fn crc_valid_negative_offset_delta_decodes_without_panic() {
    // A CRC only proves the bytes are what the writer wrote, not that the writer was sane: a
    // negative offset delta (here on a batch whose sequence would wrap) must decode, not panic.
    let mut builder = BatchBuilder::idempotent(1000, 0, i32::MAX);
    builder.append(T0, None, Some(Bytes::from_static(b"x")), Vec::new());
    let built = builder.build();
    let mut records = decoded_records(&built);
    records[0].offset_delta = -1;
    let mut header = *built.header();
    header.last_offset_delta = -1;
    let odd = encode_batch(&header, &records);
    let decoded = RecordBatch::decode_exact(odd.bytes().clone()).expect("CRC-valid batch");
    let record = &decoded_records(&decoded)[0];
    assert_eq!(record.offset, -1);
    // Java's `incrementSequence(Int.MAX, -1)` in wrapping `int` arithmetic.
    assert_eq!(decoded.header().last_sequence(), -2);
    assert_eq!(record.sequence, -2);
}

#[test]
fn corrupt_base_offset_near_i64_max_does_not_overflow() {
    // The base offset is outside the CRC, so a corrupt one reaches the offset arithmetic.
    let file = load_vectors();
    let batch = decode_vector("v1", &file.vectors["v1"]).with_base_offset(i64::MAX);
    let decoded = RecordBatch::decode_exact(batch.bytes().clone()).expect("CRC still valid");
    assert_eq!(decoded.last_offset(), i64::MIN);
    assert_eq!(decoded.next_offset(), i64::MIN + 1);
    let offsets: Vec<i64> = decoded_records(&decoded).iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [i64::MAX, i64::MIN]);
}

/// One random record: timestamp offset from the batch's first timestamp, key, value, headers.
#[derive(Debug, Clone)]
struct RecordSpec {
    timestamp_delta: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

/// One random batch as a producer or leader would build it.
#[derive(Debug, Clone)]
struct BatchSpec {
    base_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    log_append_time_ms: Option<i64>,
    first_timestamp: i64,
    records: Vec<RecordSpec>,
}

fn nullable_bytes() -> impl Strategy<Value = Option<Vec<u8>>> {
    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40))
}

fn record_spec() -> impl Strategy<Value = RecordSpec> {
    // Header keys are any UTF-8 (not only ASCII); values may be null.
    let header = (".{0,6}", nullable_bytes());
    (
        -10_000i64..10_000,
        nullable_bytes(),
        nullable_bytes(),
        proptest::collection::vec(header, 0..4),
    )
        .prop_map(|(timestamp_delta, key, value, headers)| RecordSpec {
            timestamp_delta,
            key,
            value,
            headers,
        })
}

fn batch_spec() -> impl Strategy<Value = BatchSpec> {
    // Sequences include −1 (no idempotence) and values right below the wrap at i32::MAX.
    let base_sequence = prop_oneof![
        Just(NO_SEQUENCE),
        0..1_000i32,
        (i32::MAX - 25)..=i32::MAX,
        0..=i32::MAX,
    ];
    let producer_id = prop_oneof![Just(-1i64), 0..i64::MAX];
    let producer_epoch = prop_oneof![Just(-1i16), 0..=i16::MAX];
    (
        (0..i64::MAX / 2, -1..i32::MAX, producer_id, producer_epoch),
        (
            base_sequence,
            any::<bool>(),
            proptest::option::of(0..i64::MAX / 2),
        ),
        (
            0..i64::MAX / 2,
            proptest::collection::vec(record_spec(), 0..20),
        ),
    )
        .prop_map(
            |(
                (base_offset, partition_leader_epoch, producer_id, producer_epoch),
                (base_sequence, transactional, log_append_time_ms),
                (first_timestamp, records),
            )| BatchSpec {
                base_offset,
                partition_leader_epoch,
                producer_id,
                producer_epoch,
                base_sequence,
                transactional,
                log_append_time_ms,
                first_timestamp,
                records,
            },
        )
}

fn build(spec: &BatchSpec) -> RecordBatch {
    let mut builder =
        BatchBuilder::idempotent(spec.producer_id, spec.producer_epoch, spec.base_sequence);
    builder.base_offset = spec.base_offset;
    builder.partition_leader_epoch = spec.partition_leader_epoch;
    builder.transactional = spec.transactional;
    builder.log_append_time_ms = spec.log_append_time_ms;
    for record in &spec.records {
        let headers = record
            .headers
            .iter()
            .map(|(key, value)| RecordHeader {
                key: key.clone(),
                value: value.clone().map(Bytes::from),
            })
            .collect();
        builder.append(
            spec.first_timestamp + record.timestamp_delta,
            record.key.clone().map(Bytes::from),
            record.value.clone().map(Bytes::from),
            headers,
        );
    }
    builder.build()
}

/// The header a decoder must report for `spec` (CRC and length aside).
fn expected_header_fields(spec: &BatchSpec, header: &BatchHeader) {
    let count = spec.records.len();
    assert_eq!(header.base_offset, spec.base_offset);
    assert_eq!(header.partition_leader_epoch, spec.partition_leader_epoch);
    assert_eq!(header.producer_id, spec.producer_id);
    assert_eq!(header.producer_epoch, spec.producer_epoch);
    assert_eq!(header.base_sequence, spec.base_sequence);
    assert_eq!(header.is_transactional(), spec.transactional);
    assert!(!header.is_control());
    assert_eq!(header.records_count as usize, count);
    assert_eq!(header.last_offset_delta as usize, count.saturating_sub(1));
    let timestamps = spec
        .records
        .iter()
        .map(|record| spec.first_timestamp + record.timestamp_delta);
    let expected_max = spec.log_append_time_ms.or(timestamps.max()).unwrap_or(-1);
    assert_eq!(header.max_timestamp, expected_max);
    let expected_base = spec
        .records
        .first()
        .map_or(-1, |record| spec.first_timestamp + record.timestamp_delta);
    assert_eq!(header.base_timestamp, expected_base);
    let expected_type = if spec.log_append_time_ms.is_some() {
        TimestampType::LogAppendTime
    } else {
        TimestampType::CreateTime
    };
    assert_eq!(header.timestamp_type(), expected_type);
}

fn expected_record_fields(spec: &BatchSpec, records: &[Record]) {
    assert_eq!(records.len(), spec.records.len());
    for (index, (record, expected)) in records.iter().zip(&spec.records).enumerate() {
        assert_eq!(record.offset, spec.base_offset + index as i64);
        let timestamp = spec
            .log_append_time_ms
            .unwrap_or(spec.first_timestamp + expected.timestamp_delta);
        assert_eq!(record.timestamp, timestamp);
        let sequence = if spec.base_sequence < 0 {
            NO_SEQUENCE
        } else {
            increment_sequence(spec.base_sequence, index as i32)
        };
        assert_eq!(record.sequence, sequence);
        assert_eq!(record.key.as_deref(), expected.key.as_deref());
        assert_eq!(record.value.as_deref(), expected.value.as_deref());
        let headers: Vec<(String, Option<&[u8]>)> = record
            .headers
            .iter()
            .map(|header| (header.key.clone(), header.value.as_deref()))
            .collect();
        let expected_headers: Vec<(String, Option<&[u8]>)> = expected
            .headers
            .iter()
            .map(|(key, value)| (key.clone(), value.as_deref()))
            .collect();
        assert_eq!(headers, expected_headers);
    }
}

proptest! {
    #[test]
    fn random_batches_round_trip_and_reencode_byte_identical(spec in batch_spec()) {
        let built = build(&spec);
        let decoded = RecordBatch::decode_exact(built.bytes().clone())
            .map_err(|error| TestCaseError::fail(error.to_string()))?;
        expected_header_fields(&spec, decoded.header());
        let records = decoded_records(&decoded);
        expected_record_fields(&spec, &records);
        let reencoded = encode_batch(decoded.header(), &records);
        prop_assert_eq!(reencoded.bytes(), built.bytes());
    }

    #[test]
    fn random_single_bit_flip_is_detected(spec in batch_spec(), position in any::<prop::sample::Index>(), bit in 0..8u8) {
        let built = build(&spec);
        let mut corrupt = built.bytes().to_vec();
        let byte = CRC_START + position.index(corrupt.len() - CRC_START);
        corrupt[byte] ^= 1 << bit;
        let error = RecordBatch::decode_exact(Bytes::from(corrupt))
            .expect_err("a flipped bit must be detected");
        let is_crc_mismatch = matches!(error.kind, RecordErrorKind::CrcMismatch { .. });
        prop_assert!(is_crc_mismatch, "byte {} bit {}: {:?}", byte, bit, error.kind);
    }

    #[test]
    fn crc_resealed_garbage_is_an_error_or_a_batch_never_a_panic(
        spec in batch_spec(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        control in any::<bool>(),
    ) {
        // The CRC protects against damage, not against a writer that wrote nonsense: every read
        // path must turn nonsense with a valid CRC into a typed error or a batch.
        let mut bytes = build(&spec).bytes().to_vec();
        if control {
            bytes[ATTRIBUTES_FIELD.end - 1] |= 0x20;
        }
        for (position, value) in edits {
            let at = CRC_START + position.index(bytes.len() - CRC_START);
            bytes[at] = value;
        }
        reseal_crc(&mut bytes);
        if let Ok(batch) = RecordBatch::decode_exact(Bytes::from(bytes)) {
            let header = batch.header();
            let _ = (header.last_offset(), header.next_offset(), header.last_sequence());
            let _ = batch.records().count();
            let _ = batch.control_record();
        }
    }
}
