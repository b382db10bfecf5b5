//! Keeps `tests/vectors/sample-segment.log` true: the README's first command dumps it.
//!
//! The file is a segment as a destination partition leader would have written it around a
//! KIP-1279 failover: mirrored idempotent and transactional batches (a COMMIT and an ABORT
//! included), then the MIRROR_PID_RESET at the bumped leader epoch, then a local producer that
//! reuses a mirrored producer id from sequence 0. Set `MIRRORSIM_UPDATE_SAMPLE=1` to rewrite
//! it after an intended format change.

use bytes::Bytes;
use mirrorsim::common::LeaderEpoch;
use mirrorsim::log::{AppendOrigin, LogConfig, MemoryDisk, PartitionLog};
use mirrorsim::record::{
    end_transaction_marker, mirror_pid_reset, BatchBuilder, MarkerProducer, RecordBatch,
    RecordHeader,
};

const T0: i64 = 1_700_000_000_000;

fn record_batch(
    producer_id: i64,
    sequence: i32,
    transactional: bool,
    values: &[&str],
) -> RecordBatch {
    let mut builder = BatchBuilder::idempotent(producer_id, 0, sequence);
    builder.transactional = transactional;
    for (index, value) in values.iter().enumerate() {
        builder.append(
            T0 + index as i64,
            Some(Bytes::from(format!("order-{}", sequence + index as i32))),
            Some(Bytes::from(value.to_string())),
            vec![RecordHeader {
                key: "origin".into(),
                value: Some(Bytes::from_static(b"cluster-a")),
            }],
        );
    }
    builder.build()
}

fn sample_segment() -> Bytes {
    let (mut log, _) = PartitionLog::open(MemoryDisk::new(), LogConfig::default()).unwrap();
    let marker = |producer_id, committed| {
        end_transaction_marker(
            MarkerProducer {
                producer_id,
                producer_epoch: 0,
            },
            committed,
            3,
            T0 + 50,
        )
    };
    let mut leader = |batch: &RecordBatch, epoch, origin| {
        log.append_as_leader(batch, epoch, origin, T0)
            .expect("sample append");
    };
    leader(
        &record_batch(1000, 0, false, &["created", "paid"]),
        LeaderEpoch(4),
        AppendOrigin::Client,
    );
    leader(
        &record_batch(1001, 0, true, &["reserved"]),
        LeaderEpoch(4),
        AppendOrigin::Client,
    );
    leader(
        &marker(1001, true),
        LeaderEpoch(4),
        AppendOrigin::Coordinator,
    );
    leader(
        &record_batch(1002, 0, true, &["refund"]),
        LeaderEpoch(5),
        AppendOrigin::Client,
    );
    leader(
        &marker(1002, false),
        LeaderEpoch(5),
        AppendOrigin::Coordinator,
    );
    leader(
        &mirror_pid_reset("cluster-a", T0 + 60),
        LeaderEpoch(16),
        AppendOrigin::Coordinator,
    );
    leader(
        &record_batch(1000, 0, false, &["local-write"]),
        LeaderEpoch(16),
        AppendOrigin::Client,
    );
    log.to_segment_bytes()
}

#[test]
fn sample_segment_matches_the_committed_file() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/sample-segment.log"
    );
    let expected = sample_segment();
    if std::env::var_os("MIRRORSIM_UPDATE_SAMPLE").is_some() {
        std::fs::write(path, &expected).expect("write sample segment");
    }
    let committed = std::fs::read(path).expect("tests/vectors/sample-segment.log exists");
    assert_eq!(
        committed,
        expected.to_vec(),
        "regenerate with MIRRORSIM_UPDATE_SAMPLE=1"
    );
}
