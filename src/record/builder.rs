//! Encoding RecordBatch v2.
//!
//! [`encode_batch`] writes a batch from explicit header fields and raw records (deltas as
//! given), so a decoded uncompressed batch re-encodes byte for byte. When the header's
//! attributes name a codec, the records region is compressed with it
//! ([`super::compression::compress`], as Kafka's Java producer writes each codec). [`BatchBuilder`] is the producer-side
//! convenience: it derives offset deltas, timestamps and the last offset delta the way Kafka's
//! `MemoryRecordsBuilder` does (base timestamp = first record's timestamp, max timestamp = the
//! largest record timestamp). [`end_transaction_marker`] and [`mirror_pid_reset`] build the two
//! control batches a data partition sees.

use bytes::{BufMut, Bytes, BytesMut};

use super::batch::{
    BatchHeader, Record, RecordBatch, RecordHeader, ATTRIBUTES_OFFSET, CONTROL_BIT, CRC_OFFSET,
    DELETE_HORIZON_BIT, LOG_OVERHEAD, MAGIC_V2, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
    NO_TIMESTAMP, RECORD_BATCH_OVERHEAD, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT,
};
use super::compression::compress;
use super::control::{
    control_record_key, end_transaction_value, mirror_pid_reset_value, ControlRecordType,
};
use super::varint::{varint_size, varlong_size, write_varint, write_varlong};
use super::CompressionType;

/// Encodes one batch. From `header` it takes every field except `batch_length`, `magic`, `crc`
/// and `records_count`, which it computes; from each record it takes the raw fields
/// (`attributes`, `timestamp_delta`, `offset_delta`, key, value, headers) and ignores the
/// derived ones (`offset`, `timestamp`, `sequence`).
///
/// Panics when the attributes hold codec id 5, 6 or 7 (a programming error: no such codec).
pub fn encode_batch(header: &BatchHeader, records: &[Record]) -> RecordBatch {
    let records_size: usize = records.iter().map(record_size_with_length).sum();
    let mut region = BytesMut::with_capacity(records_size);
    for record in records {
        write_record(&mut region, record);
    }
    assert_eq!(
        region.len(),
        records_size,
        "record size accounting is wrong"
    );
    let codec = header.compression();
    let compressed;
    let region: &[u8] = match codec {
        CompressionType::None => &region,
        _ => {
            compressed = compress(codec, &region);
            &compressed
        }
    };
    let size = RECORD_BATCH_OVERHEAD + region.len();
    let mut out = BytesMut::with_capacity(size);
    out.put_i64(header.base_offset);
    out.put_i32((size - LOG_OVERHEAD) as i32);
    out.put_i32(header.partition_leader_epoch);
    out.put_i8(MAGIC_V2);
    out.put_u32(0); // CRC, filled in below once the covered bytes exist.
    out.put_i16(header.attributes);
    out.put_i32(header.last_offset_delta);
    out.put_i64(header.base_timestamp);
    out.put_i64(header.max_timestamp);
    out.put_i64(header.producer_id);
    out.put_i16(header.producer_epoch);
    out.put_i32(header.base_sequence);
    out.put_i32(records.len() as i32);
    out.put_slice(region);
    let crc = crc32c::crc32c(&out[ATTRIBUTES_OFFSET..]);
    out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    let bytes = out.freeze();
    RecordBatch::decode(&bytes, 0).expect("an encoded batch must decode")
}

fn record_body_size(record: &Record) -> usize {
    let mut size = 1 + varlong_size(record.timestamp_delta) + varint_size(record.offset_delta);
    size += nullable_size(record.key.as_deref());
    size += nullable_size(record.value.as_deref());
    size += varint_size(record.headers.len() as i32);
    for header in &record.headers {
        size += nullable_size(Some(header.key.as_bytes()));
        size += nullable_size(header.value.as_deref());
    }
    size
}

fn record_size_with_length(record: &Record) -> usize {
    let body = record_body_size(record);
    varint_size(body as i32) + body
}

fn nullable_size(bytes: Option<&[u8]>) -> usize {
    match bytes {
        None => varint_size(-1),
        Some(bytes) => varint_size(bytes.len() as i32) + bytes.len(),
    }
}

fn write_nullable(out: &mut BytesMut, bytes: Option<&[u8]>) {
    match bytes {
        None => write_varint(out, -1),
        Some(bytes) => {
            write_varint(out, bytes.len() as i32);
            out.put_slice(bytes);
        }
    }
}

fn write_record(out: &mut BytesMut, record: &Record) {
    write_varint(out, record_body_size(record) as i32);
    out.put_i8(record.attributes);
    write_varlong(out, record.timestamp_delta);
    write_varint(out, record.offset_delta);
    write_nullable(out, record.key.as_deref());
    write_nullable(out, record.value.as_deref());
    write_varint(out, record.headers.len() as i32);
    for header in &record.headers {
        write_nullable(out, Some(header.key.as_bytes()));
        write_nullable(out, header.value.as_deref());
    }
}

/// Builds one batch the way a producer (or a broker writing a control batch) does.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    /// Base offset; producers write 0 and the leader assigns the real one.
    pub base_offset: i64,
    /// Partition leader epoch; producers write −1 and the leader stamps its own.
    pub partition_leader_epoch: i32,
    /// Producer id, or −1.
    pub producer_id: i64,
    /// Producer epoch, or −1.
    pub producer_epoch: i16,
    /// Sequence of the first record, or −1.
    pub base_sequence: i32,
    /// Sets attribute bit 4.
    pub transactional: bool,
    /// Sets attribute bit 5.
    pub control: bool,
    /// With `LogAppendTime(t)` the batch carries attribute bit 3 and max timestamp `t`.
    pub log_append_time_ms: Option<i64>,
    /// Sets attribute bit 6 and stores the horizon in the base timestamp.
    pub delete_horizon_ms: Option<i64>,
    /// The codec of the records region (attribute bits 0–2).
    pub compression: CompressionType,
    records: Vec<Record>,
}

impl Default for BatchBuilder {
    fn default() -> Self {
        Self {
            base_offset: 0,
            partition_leader_epoch: -1,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            transactional: false,
            control: false,
            log_append_time_ms: None,
            delete_horizon_ms: None,
            compression: CompressionType::None,
            records: Vec::new(),
        }
    }
}

impl BatchBuilder {
    /// A builder for a batch of an idempotent (or transactional) producer.
    pub fn idempotent(producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        Self {
            producer_id,
            producer_epoch,
            base_sequence,
            ..Self::default()
        }
    }

    /// Adds a record with the next offset delta. Timestamps are absolute (ms).
    pub fn append(
        &mut self,
        timestamp_ms: i64,
        key: Option<Bytes>,
        value: Option<Bytes>,
        headers: Vec<RecordHeader>,
    ) -> &mut Self {
        let offset_delta = self.records.len() as i32;
        self.records.push(Record {
            offset: 0,
            timestamp: timestamp_ms,
            sequence: NO_SEQUENCE,
            attributes: 0,
            timestamp_delta: 0, // Fixed in `build` once the base timestamp is known.
            offset_delta,
            key,
            value,
            headers,
        });
        self
    }

    /// Number of records appended so far.
    pub fn record_count(&self) -> usize {
        self.records.len()
    }

    /// Encodes the batch.
    pub fn build(&self) -> RecordBatch {
        let first_timestamp = self.records.first().map_or(NO_TIMESTAMP, |r| r.timestamp);
        let base_timestamp = self.delete_horizon_ms.unwrap_or(first_timestamp);
        let max_record_timestamp = self
            .records
            .iter()
            .map(|record| record.timestamp)
            .max()
            .unwrap_or(NO_TIMESTAMP);
        let mut attributes = i16::from(self.compression.id());
        if self.transactional {
            attributes |= TRANSACTIONAL_BIT;
        }
        if self.control {
            attributes |= CONTROL_BIT;
        }
        if self.log_append_time_ms.is_some() {
            attributes |= TIMESTAMP_TYPE_BIT;
        }
        if self.delete_horizon_ms.is_some() {
            attributes |= DELETE_HORIZON_BIT;
        }
        let records: Vec<Record> = self
            .records
            .iter()
            .map(|record| Record {
                timestamp_delta: record.timestamp.wrapping_sub(first_timestamp),
                ..record.clone()
            })
            .collect();
        let header = BatchHeader {
            base_offset: self.base_offset,
            batch_length: 0,
            partition_leader_epoch: self.partition_leader_epoch,
            magic: MAGIC_V2,
            crc: 0,
            attributes,
            last_offset_delta: self.records.last().map_or(0, |r| r.offset_delta),
            base_timestamp,
            max_timestamp: self.log_append_time_ms.unwrap_or(max_record_timestamp),
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            base_sequence: self.base_sequence,
            records_count: records.len() as i32,
        };
        encode_batch(&header, &records)
    }
}

/// Identifies the writer of an end-transaction marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerProducer {
    /// Producer id of the transaction.
    pub producer_id: i64,
    /// Producer epoch of the transaction (or the bumped epoch, under transaction version 2).
    pub producer_epoch: i16,
}

/// An ABORT (`committed = false`) or COMMIT marker batch as a partition leader writes it:
/// transactional and control bits set, base sequence −1, one record with no headers.
pub fn end_transaction_marker(
    producer: MarkerProducer,
    committed: bool,
    coordinator_epoch: i32,
    timestamp_ms: i64,
) -> RecordBatch {
    let kind = ControlRecordType::end_transaction(committed);
    let mut builder = BatchBuilder {
        producer_id: producer.producer_id,
        producer_epoch: producer.producer_epoch,
        transactional: true,
        control: true,
        ..BatchBuilder::default()
    };
    builder.append(
        timestamp_ms,
        Some(Bytes::copy_from_slice(&control_record_key(kind))),
        Some(Bytes::copy_from_slice(&end_transaction_value(
            coordinator_epoch,
        ))),
        Vec::new(),
    );
    builder.build()
}

/// A MIRROR_PID_RESET batch as design.md §6 encodes it: control bit set, not transactional,
/// producer id, epoch and base sequence −1, one record with key (0, 7) and value
/// (0, SourceClusterId). The partition leader epoch is stamped on append.
pub fn mirror_pid_reset(source_cluster_id: &str, timestamp_ms: i64) -> RecordBatch {
    let mut builder = BatchBuilder {
        control: true,
        ..BatchBuilder::default()
    };
    builder.append(
        timestamp_ms,
        Some(Bytes::copy_from_slice(&control_record_key(
            ControlRecordType::MirrorPidReset,
        ))),
        Some(Bytes::from(mirror_pid_reset_value(source_cluster_id))),
        Vec::new(),
    );
    builder.build()
}
