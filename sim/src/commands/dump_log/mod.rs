//! `mirrorsim dump-log`: prints a Kafka log segment batch by batch, like `kafka-dump-log`.
//!
//! Contract:
//! - Input is a segment: RecordBatch v2 batches laid end to end from byte 0, uncompressed or
//!   compressed with gzip, snappy, lz4 or zstd (the records are decompressed and printed), and
//!   magic 0 and 1 messages (older clusters' message sets, plain or compressed wrappers:
//!   `legacy.rs`), printed as kafka-dump-log prints them. It is read one entry at a time (a
//!   FIFO or a device is dumped as it delivers).
//! - As kafka-dump-log does, a damaged batch is printed and the dump goes on wherever the
//!   batch's length lets it: a CRC that does not match shows as `valid=false` (`isvalid: false`
//!   in the kafka layout); a batch whose records do not decode is printed with the records that
//!   did and its error (`error=` with the byte position); an entry that is neither (a magic 0
//!   or 1 entry that is not a message, another magic, or a length no v2 batch has) is named
//!   and skipped by its length. Where the
//!   length cannot be trusted (the file ends inside the batch, or the length field is below
//!   Kafka's minimum of 14, as in a zero-filled tail) the rest of the file is reported as
//!   "Found N invalid bytes at the end of FILE", kafka-dump-log's line, which is where log
//!   recovery would truncate. Every problem is also in the returned [`DumpSummary`].
//! - Layouts ([`OutputFormat`]): our text (one `name=value` line per batch, one indented line
//!   per record; a key, value or header value is `null`, a quoted string when it is printable
//!   UTF-8 and `0x` hex otherwise; control records decoded: `COMMIT coordinatorEpoch=N`,
//!   `ABORT coordinatorEpoch=N`, `MIRROR_PID_RESET sourceClusterId=ID`, `UNKNOWN type=N`), JSON
//!   (one object per batch per line with the same field names; a payload is `null`,
//!   `{"text": …}` or `{"hex": …}`), and kafka-dump-log's layout (see [`output`]).
//! - A data record's key and value are shown as [`DumpOptions::decoder`] reads them: Kafka's
//!   string decoder, or a topic decoder for `__consumer_offsets`, `__transaction_state` or
//!   `__mirror_state` (`decode/`), which adds the decoded key and payload to every layout.
//! - A file named like a side file of a partition (`.index`, `.timeindex`, `.txnindex`,
//!   `.snapshot`, `leader-epoch-checkpoint`, `partition.metadata`, and the model's own
//!   `high-watermark.checkpoint` and `log-start-offset.checkpoint`) is decoded as that file
//!   (`side_files.rs`) by [`dump_file`].
//! - Only reading the input or writing the output can fail the dump ([`DumpError`]); nothing
//!   here panics on bad input.

mod decode;
mod legacy;
mod model;
mod output;
mod side_files;

pub use decode::RecordDecoder;
pub use side_files::FileKind;

use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use mirrorsim::record::{
    RecordBatch, RecordError, RecordErrorKind, LOG_OVERHEAD, MAGIC_V2, RECORD_BATCH_OVERHEAD,
};

use model::{describe_batch, SkippedDump};

/// How the dump is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// `name=value` lines for people.
    Text,
    /// One JSON object per batch per line, for programs.
    Json,
    /// kafka-dump-log's own text layout, for scripts written for it.
    Kafka,
}

/// What to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DumpOptions {
    /// The layout.
    pub format: OutputFormat,
    /// kafka-dump-log's `--print-data-log`: in the kafka layout, the records with their keys
    /// and payloads (our text and JSON always print them).
    pub print_data_log: bool,
    /// kafka-dump-log's `--deep-iteration`: in the kafka layout, the records without payloads.
    pub deep_iteration: bool,
    /// How data records' keys and values are read: Kafka's string decoder, or one of the topic
    /// decoders (`--offsets-decoder`, `--transaction-log-decoder`, `--mirror-state-decoder`),
    /// which add the decoded key and payload to every layout.
    pub decoder: RecordDecoder,
}

impl DumpOptions {
    /// The given layout with kafka-dump-log's defaults (batch lines only in its layout).
    pub fn new(format: OutputFormat) -> Self {
        Self {
            format,
            print_data_log: false,
            deep_iteration: false,
            decoder: RecordDecoder::Strings,
        }
    }

    /// Whether records are decoded: always in our layouts, with `--deep-iteration`,
    /// `--print-data-log` or a topic decoder in Kafka's.
    fn reads_records(&self) -> bool {
        self.format != OutputFormat::Kafka || self.deep_iteration || self.record_decoder().is_some()
    }

    /// The decoder whose key and payload each data record carries: a topic decoder in every
    /// layout (kafka-dump-log's decoders imply `--print-data-log`), Kafka's string decoder in
    /// the kafka layout with `--print-data-log` (our layouts print keys and values themselves).
    fn record_decoder(&self) -> Option<RecordDecoder> {
        let strings_printed = self.format == OutputFormat::Kafka && self.print_data_log;
        (self.decoder.is_topic_decoder() || strings_printed).then_some(self.decoder)
    }
}

/// What a finished dump found.
#[derive(Debug, Default)]
pub struct DumpSummary {
    /// Entries printed: v2 batches (valid or not) and skipped entries.
    pub batches: usize,
    /// Entries that were not whole, valid v2 batches (CRC mismatch, records that do not
    /// decode, impossible offsets, not a v2 batch).
    pub invalid_batches: usize,
    /// The first [`MAX_PROBLEMS`] problems, each naming its byte position.
    pub problems: Vec<RecordError>,
    /// The damaged tail, if the file has one.
    pub tail: Option<InvalidTail>,
    /// The first [`MAX_PROBLEMS`] record offsets that do not follow their predecessor
    /// (kafka-dump-log's "Non-consecutive offsets" warning; compaction makes them legitimately).
    pub non_consecutive: Vec<(i64, i64)>,
    /// How many offsets did not follow their predecessor in all (the list above is capped, so
    /// that a long compacted segment keeps the dump's memory flat).
    pub non_consecutive_count: u64,
}

/// How many problems a summary keeps; the count of invalid batches goes on past it.
pub const MAX_PROBLEMS: usize = 100;

/// The bytes at the end of a segment that do not form a batch.
#[derive(Debug)]
pub struct InvalidTail {
    /// Where they start (the segment's valid length).
    pub position: u64,
    /// How many there are.
    pub length: TailLength,
    /// Why they are not a batch.
    pub error: RecordError,
    /// The file's name, as kafka-dump-log prints it.
    pub file_name: String,
}

/// The length of an invalid tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailLength {
    /// Exactly this many bytes.
    Exact(u64),
    /// At least this many: the input (a device or a pipe) did not end within [`TAIL_DRAIN_LIMIT`].
    AtLeast(u64),
}

/// How far an input of unknown length is read past a damaged batch to count its tail.
pub const TAIL_DRAIN_LIMIT: u64 = 64 << 20;

impl DumpSummary {
    /// Whether every byte of the file was a valid batch.
    pub fn is_clean(&self) -> bool {
        self.invalid_batches == 0 && self.tail.is_none()
    }

    fn problem(&mut self, error: RecordError) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(error);
        }
    }
}

/// Why a dump stopped early.
#[derive(Debug)]
pub enum DumpError {
    /// The segment file could not be read.
    Unreadable {
        /// The file that was asked for.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// Reading the input failed part-way (reported as [`DumpError::Unreadable`] by
    /// [`dump_file`], which knows the path).
    ReadFailed {
        /// Where the batch being read starts.
        position: u64,
        /// What the operating system said.
        source: io::Error,
    },
    /// Writing the dump failed (for example, the reader closed the pipe).
    Output(io::Error),
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unreadable { path, source } => {
                write!(f, "cannot read segment file {}: {source}", path.display())
            }
            Self::ReadFailed { position, source } => {
                write!(f, "reading the batch at byte {position} failed: {source}")
            }
            Self::Output(error) => write!(f, "cannot write the dump: {error}"),
        }
    }
}

impl std::error::Error for DumpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Unreadable { source, .. } | Self::ReadFailed { source, .. } => Some(source),
            Self::Output(error) => Some(error),
        }
    }
}

impl From<io::Error> for DumpError {
    fn from(error: io::Error) -> Self {
        Self::Output(error)
    }
}

/// The input being dumped: its name as given and as a file name, and its length when known.
#[derive(Debug, Clone)]
pub struct Source {
    /// The path as given (kafka-dump-log's `Dumping PATH` line).
    pub path: String,
    /// The file's name (kafka-dump-log's "at the end of NAME" and "Log starting offset").
    pub file_name: String,
    /// The length of a regular file; `None` for a pipe or a device, whose tail is counted by
    /// reading it.
    pub length: Option<u64>,
}

impl Source {
    /// An input of known length that has no file (an in-memory segment).
    pub fn in_memory(name: &str, length: u64) -> Self {
        Self {
            path: name.to_string(),
            file_name: name.to_string(),
            length: Some(length),
        }
    }
}

/// Reads the segment at `path` and dumps it to `out`.
pub fn dump_file(
    path: &Path,
    options: DumpOptions,
    out: &mut impl Write,
) -> Result<DumpSummary, DumpError> {
    let unreadable = |source| DumpError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(unreadable)?;
    let metadata = file.metadata().map_err(unreadable)?;
    let source = Source {
        path: path.display().to_string(),
        file_name: path.file_name().map_or_else(
            || path.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        ),
        length: metadata.is_file().then_some(metadata.len()),
    };
    let kind = FileKind::of(&source.file_name);
    if kind != FileKind::Segment {
        // Index, snapshot and checkpoint files are small (an index is capped at 10 MB by
        // default): read whole.
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(unreadable)?;
        return Ok(side_files::dump_side_file(
            kind, &bytes, &source, options, out,
        )?);
    }
    dump_reader(io::BufReader::new(file), &source, options, out).map_err(|error| match error {
        DumpError::ReadFailed { source, .. } => unreadable(source),
        other => other,
    })
}

/// Dumps the segment held in `bytes` (whose first byte is segment position 0) to `out`.
pub fn dump(
    bytes: Bytes,
    options: DumpOptions,
    out: &mut impl Write,
) -> Result<DumpSummary, DumpError> {
    let source = Source::in_memory("segment", bytes.len() as u64);
    dump_reader(&bytes[..], &source, options, out)
}

/// Dumps the segment `input` delivers (its first byte is segment position 0) to `out`, one
/// batch in memory at a time.
pub fn dump_reader(
    mut input: impl Read,
    source: &Source,
    options: DumpOptions,
    out: &mut impl Write,
) -> Result<DumpSummary, DumpError> {
    let mut summary = DumpSummary::default();
    let mut position = 0u64;
    let mut last_record_offset = None;
    if options.format == OutputFormat::Kafka {
        write_kafka_preamble(out, source)?;
    }
    loop {
        let read = next_entry(&mut input, position)
            .map_err(|source| DumpError::ReadFailed { position, source })?;
        let bytes = match read {
            Entry::End => break,
            Entry::Tail { read, error } => {
                let length = tail_length(&mut input, source, position, read)
                    .map_err(|source| DumpError::ReadFailed { position, source })?;
                let tail = InvalidTail {
                    position,
                    length,
                    error,
                    file_name: source.file_name.clone(),
                };
                write_tail(out, options.format, &tail)?;
                summary.tail = Some(tail);
                break;
            }
            Entry::Whole(bytes) => bytes,
        };
        summary.batches += 1;
        match check_entry_kind(&bytes, position)
            .and_then(|()| RecordBatch::inspect(&bytes, position))
        {
            Ok(inspected) => {
                let mut described = describe_batch(position, &inspected, options.reads_records());
                decode_records(&mut described, options);
                note_offsets(&described, &mut last_record_offset, &mut summary);
                note_batch_problems(&described, inspected.computed_crc, &mut summary);
                write_batch(out, options, &described)?;
            }
            Err(error) if legacy_magic(&bytes) => {
                // A magic 0 or 1 message: decoded as kafka-dump-log does; skipped only when it
                // is not a message at all.
                match legacy::describe_legacy(position, &bytes, options.reads_records()) {
                    Some((mut described, computed)) => {
                        decode_records(&mut described, options);
                        note_offsets(&described, &mut last_record_offset, &mut summary);
                        note_batch_problems(&described, computed, &mut summary);
                        write_batch(out, options, &described)?;
                    }
                    None => skip_entry(out, options.format, position, &bytes, error, &mut summary)?,
                }
            }
            Err(error) => skip_entry(out, options.format, position, &bytes, error, &mut summary)?,
        }
        position += bytes.len() as u64;
    }
    Ok(summary)
}

/// Each data record's key and payload as [`DumpOptions::record_decoder`] reads them (control
/// records are not given to a decoder, as Kafka gives them to none).
fn decode_records(batch: &mut model::BatchDump, options: DumpOptions) {
    let Some(decoder) = options.record_decoder() else {
        return;
    };
    if batch.is_control {
        return;
    }
    for record in &mut batch.records {
        record.decoded = Some(decoder.decode(
            record.offset,
            record.raw_key.as_deref(),
            record.raw_value.as_deref(),
        ));
    }
}

/// Whether a whole entry's magic byte says magic 0 or 1.
fn legacy_magic(entry: &Bytes) -> bool {
    matches!(entry.get(HEADER_UP_TO_MAGIC - 1), Some(0 | 1))
}

/// Names an entry this tool does not decode (a v2 length below 49, or a magic 0/1 entry too
/// short to be a message) and skips it by its length.
fn skip_entry(
    out: &mut impl Write,
    format: OutputFormat,
    position: u64,
    bytes: &Bytes,
    error: RecordError,
    summary: &mut DumpSummary,
) -> io::Result<()> {
    let skipped = SkippedDump {
        position,
        size: bytes.len(),
        magic: bytes
            .get(HEADER_UP_TO_MAGIC - 1)
            .map_or(-1, |magic| *magic as i8),
        valid: false,
        error: error.to_string(),
    };
    summary.invalid_batches += 1;
    summary.problem(error);
    write_skipped(out, format, &skipped)
}

/// Counts a batch that is not whole and valid, and keeps its problems: a CRC mismatch (named
/// at the CRC field), then the first problem after the header.
fn note_batch_problems(batch: &model::BatchDump, computed_crc: u32, summary: &mut DumpSummary) {
    if !batch.valid || batch.error_detail.is_some() {
        summary.invalid_batches += 1;
    }
    if !batch.valid {
        let crc_at = if batch.magic < MAGIC_V2 {
            LEGACY_CRC_AT
        } else {
            CRC_AT
        };
        summary.problem(RecordError::new(
            batch.position + crc_at,
            RecordErrorKind::CrcMismatch {
                stored: batch.crc,
                computed: computed_crc,
            },
        ));
    }
    if let Some(error) = batch.error_detail.clone() {
        summary.problem(error);
    }
}

/// Byte position of the CRC field in a batch.
const CRC_AT: u64 = 17;
/// Byte position of the CRC field in a magic 0 or 1 message.
const LEGACY_CRC_AT: u64 = 12;

/// kafka-dump-log's first lines for a file: `Dumping PATH` and, for a `.log` file named by its
/// base offset, `Log starting offset: N`; for a KRaft snapshot
/// (`<end offset>-<epoch>.checkpoint`), `Snapshot end offset: N, epoch: E`, and for
/// `bootstrap.checkpoint`, `KRaft bootstrap snapshot`.
fn write_kafka_preamble(out: &mut impl Write, source: &Source) -> io::Result<()> {
    writeln!(out, "Dumping {}", source.path)?;
    let name = source.file_name.as_str();
    if let Some(stem) = name.strip_suffix(".log") {
        let base = stem.split('.').next().unwrap_or(stem);
        if let Ok(offset) = base.parse::<i64>() {
            writeln!(out, "Log starting offset: {offset}")?;
        }
    } else if name == "bootstrap.checkpoint" {
        writeln!(out, "KRaft bootstrap snapshot")?;
    } else if let Some(stem) = name.strip_suffix(".checkpoint") {
        let parsed = stem.split_once('-').and_then(|(offset, epoch)| {
            Some((offset.parse::<i64>().ok()?, epoch.parse::<i32>().ok()?))
        });
        if let Some((offset, epoch)) = parsed {
            writeln!(out, "Snapshot end offset: {offset}, epoch: {epoch}")?;
        }
    }
    Ok(())
}

fn write_batch(
    out: &mut impl Write,
    options: DumpOptions,
    batch: &model::BatchDump,
) -> io::Result<()> {
    match options.format {
        OutputFormat::Text => output::write_text(out, batch),
        OutputFormat::Json => output::write_json(out, batch),
        OutputFormat::Kafka => output::write_kafka_batch(out, batch),
    }
}

fn write_skipped(
    out: &mut impl Write,
    format: OutputFormat,
    skipped: &SkippedDump,
) -> io::Result<()> {
    match format {
        OutputFormat::Text => output::write_text_skipped(out, skipped),
        OutputFormat::Json => output::write_json(out, skipped),
        OutputFormat::Kafka => output::write_kafka_skipped(out, skipped),
    }
}

fn write_tail(out: &mut impl Write, format: OutputFormat, tail: &InvalidTail) -> io::Result<()> {
    match format {
        OutputFormat::Text | OutputFormat::Kafka => output::write_tail_line(out, tail),
        OutputFormat::Json => output::write_json_tail(out, tail),
    }
}

/// kafka-dump-log's check over the records it iterates: each offset should follow the
/// previous one (across batches too).
fn note_offsets(batch: &model::BatchDump, last: &mut Option<i64>, summary: &mut DumpSummary) {
    for record in &batch.records {
        if let Some(previous) = *last {
            if previous.checked_add(1) != Some(record.offset) {
                summary.non_consecutive_count += 1;
                if summary.non_consecutive.len() < MAX_PROBLEMS {
                    summary.non_consecutive.push((previous, record.offset));
                }
            }
        }
        *last = Some(record.offset);
    }
}

/// The next entry of the segment, as kafka-dump-log's `FileLogInputStream` delimits them.
enum Entry {
    /// The input ended on an entry boundary.
    End,
    /// A whole entry: its 12-byte log overhead and the `length` bytes it declares.
    Whole(Bytes),
    /// The bytes from here on cannot be delimited; `read` of them were consumed.
    Tail { read: u64, error: RecordError },
}

/// Kafka's smallest entry length (`LegacyRecord.RECORD_OVERHEAD_V0`): below it the length
/// field cannot be trusted, and kafka-dump-log stops there (with an exception; this tool
/// reports the tail).
const MIN_ENTRY_LENGTH: i32 = 14;
/// Bytes from an entry's start to its magic byte, inclusive: what is needed to know its kind.
const HEADER_UP_TO_MAGIC: usize = 17;

/// Reads the entry starting at `position`: its log overhead, then as many of the declared
/// length's bytes as the input has (the file is the bound on what is read).
fn next_entry(input: &mut impl Read, position: u64) -> io::Result<Entry> {
    let mut head = Vec::with_capacity(LOG_OVERHEAD);
    (&mut *input)
        .take(LOG_OVERHEAD as u64)
        .read_to_end(&mut head)?;
    if head.is_empty() {
        return Ok(Entry::End);
    }
    if head.len() < LOG_OVERHEAD {
        return Ok(truncated(
            position,
            head.len() as u64,
            HEADER_UP_TO_MAGIC as u64,
        ));
    }
    let length = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
    if length < MIN_ENTRY_LENGTH {
        return Ok(Entry::Tail {
            read: head.len() as u64,
            error: RecordError::new(position + 8, RecordErrorKind::InvalidBatchLength(length)),
        });
    }
    let mut bytes = head;
    (&mut *input).take(length as u64).read_to_end(&mut bytes)?;
    let needed = LOG_OVERHEAD as u64 + length as u64;
    if (bytes.len() as u64) < needed {
        return Ok(truncated(position, bytes.len() as u64, needed));
    }
    Ok(Entry::Whole(Bytes::from(bytes)))
}

fn truncated(position: u64, available: u64, needed: u64) -> Entry {
    Entry::Tail {
        read: available,
        error: RecordError::new(position, RecordErrorKind::Truncated { needed, available }),
    }
}

/// How many bytes the tail starting at `position` has: from the file's length when known,
/// else by reading the rest of the input (at most [`TAIL_DRAIN_LIMIT`] bytes).
fn tail_length(
    input: &mut impl Read,
    source: &Source,
    position: u64,
    read: u64,
) -> io::Result<TailLength> {
    if let Some(length) = source.length {
        return Ok(TailLength::Exact(length.saturating_sub(position)));
    }
    let budget = TAIL_DRAIN_LIMIT.saturating_sub(read);
    let drained = io::copy(&mut (&mut *input).take(budget), &mut io::sink())?;
    let total = read + drained;
    if drained < budget {
        return Ok(TailLength::Exact(total));
    }
    // The budget is used up: one more byte says whether the input went on.
    let mut probe = [0u8; 1];
    Ok(match input.read(&mut probe)? {
        0 => TailLength::Exact(total),
        _ => TailLength::AtLeast(total),
    })
}

/// Refuses a whole entry that is not a v2 batch this tool decodes: another magic (Kafka's
/// magic 0 and 1 message sets), or a v2 length below the 49 bytes every v2 batch has.
fn check_entry_kind(bytes: &[u8], position: u64) -> Result<(), RecordError> {
    // A whole entry has at least 12 + MIN_ENTRY_LENGTH bytes, so the magic byte is there.
    let magic = bytes[HEADER_UP_TO_MAGIC - 1] as i8;
    if magic != MAGIC_V2 {
        return Err(RecordError::new(
            position + 16,
            RecordErrorKind::UnsupportedMagic(magic),
        ));
    }
    let length = (bytes.len() - LOG_OVERHEAD) as i32;
    if bytes.len() < RECORD_BATCH_OVERHEAD {
        return Err(RecordError::new(
            position + 8,
            RecordErrorKind::InvalidBatchLength(length),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::model::{payload, Payload};
    use super::*;
    use mirrorsim::record::{
        control_record_key, end_transaction_marker, mirror_pid_reset, BatchBuilder,
        CompressionType, ControlRecordType, MarkerProducer, RecordHeader,
    };

    const T0: i64 = 1_700_000_000_000;

    fn data_batch() -> RecordBatch {
        let mut builder = BatchBuilder::idempotent(1000, 0, 0);
        builder.append(
            T0,
            Some(Bytes::from_static(b"k0")),
            Some(Bytes::from_static(b"v0")),
            Vec::new(),
        );
        builder.append(
            T0 + 5,
            None,
            Some(Bytes::from_static(&[0, 0xff])),
            vec![RecordHeader {
                key: "h".to_string(),
                value: None,
            }],
        );
        builder.build()
    }

    fn compressed_batch(codec: CompressionType, base_offset: i64) -> RecordBatch {
        let mut builder = BatchBuilder::default();
        builder.compression = codec;
        for index in 0..3 {
            builder.append(
                T0 + index,
                Some(Bytes::from(format!("key-{index}"))),
                Some(Bytes::from("value ".repeat(20))),
                Vec::new(),
            );
        }
        builder.build().stamped_by_leader(base_offset, 2, None)
    }

    fn segment(batches: &[RecordBatch]) -> Bytes {
        let mut bytes = Vec::new();
        for batch in batches {
            bytes.extend_from_slice(batch.bytes());
        }
        Bytes::from(bytes)
    }

    fn dump_with(bytes: Bytes, options: DumpOptions) -> (String, DumpSummary) {
        let mut out = Vec::new();
        let summary = dump(bytes, options, &mut out).expect("an in-memory dump cannot fail");
        (
            String::from_utf8(out).expect("dump output is UTF-8"),
            summary,
        )
    }

    fn dump_to_string(bytes: Bytes, format: OutputFormat) -> (String, DumpSummary) {
        dump_with(bytes, DumpOptions::new(format))
    }

    #[test]
    fn payload_is_text_only_when_printable_utf8() {
        assert_eq!(payload(b"k0"), Payload::Text("k0".to_string()));
        assert_eq!(payload(b""), Payload::Text(String::new()));
        assert_eq!(payload(b"a\nb"), Payload::Hex("610a62".to_string()));
        assert_eq!(payload(&[0xff, 0x00]), Payload::Hex("ff00".to_string()));
        assert_eq!(
            Payload::Text("say \"hi\"".into()).to_string(),
            r#""say \"hi\"""#
        );
        assert_eq!(Payload::Hex("ff00".into()).to_string(), "0xff00");
    }

    #[test]
    fn text_dump_prints_batch_and_record_lines() {
        let batch = data_batch().stamped_by_leader(10, 3, None);
        let (text, summary) =
            dump_to_string(segment(std::slice::from_ref(&batch)), OutputFormat::Text);
        assert_eq!(summary.batches, 1);
        assert!(summary.is_clean());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let expected_batch = format!(
            "position=0 baseOffset=10 lastOffset=11 count=2 partitionLeaderEpoch=3 \
             producerId=1000 producerEpoch=0 baseSequence=0 lastSequence=1 \
             isTransactional=false isControl=false deleteHorizonMs=none \
             timestampType=CreateTime maxTimestamp={} magic=2 compression=none crc=0x{:08x} \
             valid=true size={}",
            T0 + 5,
            batch.header().crc,
            batch.size_in_bytes()
        );
        assert_eq!(lines[0], expected_batch);
        assert_eq!(
            lines[1],
            format!(
                "  offset=10 timestamp={T0} sequence=0 keySize=2 valueSize=2 key=\"k0\" \
                 value=\"v0\" headers=[]"
            )
        );
        assert_eq!(
            lines[2],
            format!(
                "  offset=11 timestamp={} sequence=1 keySize=-1 valueSize=2 key=null \
                 value=0x00ff headers=[\"h\"=null]",
                T0 + 5
            )
        );
    }

    #[test]
    fn text_dump_decodes_every_control_type() {
        let producer = MarkerProducer {
            producer_id: 7,
            producer_epoch: 2,
        };
        let mut unknown = BatchBuilder::default();
        unknown.control = true;
        unknown.append(
            T0,
            Some(Bytes::copy_from_slice(&control_record_key(
                ControlRecordType::Unknown(42),
            ))),
            None,
            Vec::new(),
        );
        let batches = [
            end_transaction_marker(producer, true, 5, T0),
            end_transaction_marker(producer, false, 6, T0).with_base_offset(1),
            mirror_pid_reset("cluster-a", T0).with_base_offset(2),
            mirror_pid_reset("cluster a", T0).with_base_offset(3),
            unknown.build().with_base_offset(4),
        ];
        let (text, summary) = dump_to_string(segment(&batches), OutputFormat::Text);
        assert_eq!(summary.batches, 5);
        assert!(summary.is_clean());
        let tails: Vec<&str> = text
            .lines()
            .filter(|line| line.starts_with("  "))
            .map(|line| line.split_once("valueSize=").expect("control line").1)
            .map(|rest| rest.split_once(' ').expect("a control record").1)
            .collect();
        assert_eq!(
            tails,
            [
                "COMMIT coordinatorEpoch=5",
                "ABORT coordinatorEpoch=6",
                "MIRROR_PID_RESET sourceClusterId=cluster-a",
                "MIRROR_PID_RESET sourceClusterId=\"cluster a\"",
                "UNKNOWN type=42",
            ]
        );
    }

    #[test]
    fn json_dump_has_the_text_fields() {
        let batches = [
            data_batch(),
            mirror_pid_reset("cluster-a", T0).with_base_offset(2),
        ];
        let (text, summary) = dump_to_string(segment(&batches), OutputFormat::Json);
        assert_eq!(summary.batches, 2);
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["position"], 0);
        assert_eq!(lines[0]["count"], 2);
        assert_eq!(lines[0]["valid"], true);
        assert_eq!(lines[0]["magic"], 2);
        assert_eq!(lines[0]["compression"], "none");
        assert_eq!(lines[0]["lastSequence"], 1);
        assert_eq!(lines[0]["deleteHorizonMs"], serde_json::Value::Null);
        assert!(lines[0].get("error").is_none());
        assert_eq!(lines[0]["records"][0]["key"]["text"], "k0");
        assert_eq!(lines[0]["records"][0]["keySize"], 2);
        assert_eq!(lines[0]["records"][1]["key"], serde_json::Value::Null);
        assert_eq!(lines[0]["records"][1]["keySize"], -1);
        assert_eq!(lines[0]["records"][1]["valueSize"], 2);
        assert_eq!(lines[0]["records"][1]["value"]["hex"], "00ff");
        assert_eq!(lines[0]["records"][1]["headers"][0]["key"], "h");
        let control = &lines[1]["records"][0]["control"];
        assert_eq!(control["type"], "MIRROR_PID_RESET");
        assert_eq!(control["typeId"], 7);
        assert_eq!(control["sourceClusterId"], "cluster-a");
        assert_eq!(lines[1]["position"], batches[0].size_in_bytes());
    }

    #[test]
    fn compressed_batches_print_their_codec_and_records() {
        let codecs = [
            CompressionType::Gzip,
            CompressionType::Snappy,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ];
        let batches: Vec<RecordBatch> = codecs
            .iter()
            .enumerate()
            .map(|(index, codec)| compressed_batch(*codec, 3 * index as i64))
            .collect();
        let (text, summary) = dump_to_string(segment(&batches), OutputFormat::Text);
        assert!(summary.is_clean(), "{summary:?}");
        assert_eq!(summary.batches, 4);
        let batch_lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("  ")).collect();
        for (line, name) in batch_lines.iter().zip(["gzip", "snappy", "lz4", "zstd"]) {
            assert!(line.contains(&format!(" compression={name} ")), "{line}");
        }
        let records: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
        assert_eq!(records.len(), 12);
        assert!(records[11].starts_with(&format!("  offset=11 timestamp={} ", T0 + 2)));
        assert!(records[11].contains("key=\"key-2\""), "{}", records[11]);
    }

    #[test]
    fn a_bad_crc_is_printed_invalid_and_the_dump_goes_on() {
        let first = data_batch();
        let second = data_batch().with_base_offset(2);
        let third = data_batch().with_base_offset(4);
        let mut bytes = segment(&[first.clone(), second, third]).to_vec();
        let second_at = first.size_in_bytes();
        // A byte of a value: only the CRC notices; the records still decode.
        bytes[second_at + 70] ^= 0x01;
        for format in [OutputFormat::Text, OutputFormat::Json, OutputFormat::Kafka] {
            let (text, summary) = dump_to_string(Bytes::from(bytes.clone()), format);
            assert_eq!(summary.batches, 3, "{format:?}");
            assert_eq!(summary.invalid_batches, 1);
            assert!(summary.tail.is_none());
            assert_eq!(summary.problems.len(), 1);
            assert_eq!(summary.problems[0].position, (second_at + 17) as u64);
            assert!(matches!(
                summary.problems[0].kind,
                RecordErrorKind::CrcMismatch { .. }
            ));
            let valid_marks: Vec<&str> = text
                .lines()
                .filter_map(|line| {
                    ["valid=", "\"valid\":", "isvalid: "]
                        .iter()
                        .find_map(|mark| line.split(mark).nth(1))
                })
                .map(|rest| &rest[..4])
                .collect();
            assert_eq!(valid_marks, ["true", "fals", "true"], "{format:?}: {text}");
        }
    }

    #[test]
    fn undecodable_records_are_shown_with_the_error_and_the_dump_goes_on() {
        let mut builder = BatchBuilder::default();
        builder.control = true;
        builder.append(T0, Some(Bytes::from_static(&[0, 0])), None, Vec::new());
        let batches = [builder.build(), data_batch().with_base_offset(1)];
        let (text, summary) = dump_to_string(segment(&batches), OutputFormat::Json);
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("JSON"))
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["valid"], true);
        let error = lines[0]["error"].as_str().expect("an error field");
        assert!(
            error.starts_with("at byte 61: corrupt control record"),
            "{error}"
        );
        assert_eq!(lines[1]["records"].as_array().unwrap().len(), 2);
        assert_eq!(summary.invalid_batches, 1);
        assert!(matches!(
            summary.problems[0].kind,
            RecordErrorKind::CorruptControlRecord(_)
        ));
    }

    #[test]
    fn a_torn_tail_is_reported_as_invalid_bytes_at_the_end() {
        let first = data_batch();
        let bytes = segment(&[first.clone(), data_batch().with_base_offset(2)]);
        let cut = bytes.len() - 3;
        let (text, summary) = dump_to_string(bytes.slice(..cut), OutputFormat::Text);
        let tail = summary.tail.expect("a damaged tail");
        let torn = (cut - first.size_in_bytes()) as u64;
        assert_eq!(tail.position, first.size_in_bytes() as u64);
        assert_eq!(tail.length, TailLength::Exact(torn));
        assert!(matches!(tail.error.kind, RecordErrorKind::Truncated { .. }));
        assert_eq!(summary.invalid_batches, 0);
        assert_eq!(
            text.lines().last(),
            Some(format!("Found {torn} invalid bytes at the end of segment").as_str())
        );
    }

    #[test]
    fn a_zero_filled_tail_is_reported_and_a_stream_tail_is_counted() {
        let mut bytes = data_batch().bytes().to_vec();
        let valid = bytes.len();
        bytes.extend([0u8; 100]);
        let (text, summary) = dump_to_string(Bytes::from(bytes.clone()), OutputFormat::Kafka);
        assert!(
            text.ends_with("Found 100 invalid bytes at the end of segment\n"),
            "{text}"
        );
        let tail = summary.tail.expect("zeros");
        assert_eq!(tail.error.position, valid as u64 + 8);
        // The same bytes from a pipe, whose length is unknown: the tail is read to count it.
        let source = Source {
            path: "pipe".into(),
            file_name: "pipe".into(),
            length: None,
        };
        let mut out = Vec::new();
        let summary = dump_reader(
            &bytes[..],
            &source,
            DumpOptions::new(OutputFormat::Json),
            &mut out,
        )
        .expect("dumps");
        assert_eq!(summary.tail.expect("zeros").length, TailLength::Exact(100));
        let last: serde_json::Value =
            serde_json::from_str(String::from_utf8(out).unwrap().lines().last().unwrap()).unwrap();
        assert_eq!(last["invalidBytes"], 100);
        assert_eq!(last["position"], valid);
    }

    #[test]
    fn an_entry_that_is_not_a_v2_batch_is_skipped_by_its_length() {
        let mut legacy = data_batch().bytes().to_vec();
        legacy[16] = 1;
        let bytes = segment(&[data_batch()]).to_vec();
        let mut all = legacy.clone();
        all.extend(&bytes);
        let (text, summary) = dump_to_string(Bytes::from(all), OutputFormat::Text);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with(&format!(
                "position=0 size={} magic=1 valid=false error=",
                legacy.len()
            )),
            "{}",
            lines[0]
        );
        assert!(lines[1].starts_with(&format!("position={} baseOffset=0", legacy.len())));
        assert_eq!(summary.invalid_batches, 1);
        assert!(matches!(
            summary.problems[0].kind,
            RecordErrorKind::UnsupportedMagic(1)
        ));
    }

    #[test]
    fn kafka_layout_matches_kafka_dump_log() {
        let batch = data_batch().stamped_by_leader(10, 3, None);
        let marker = end_transaction_marker(
            MarkerProducer {
                producer_id: 1000,
                producer_epoch: 0,
            },
            true,
            4,
            T0 + 9,
        )
        .stamped_by_leader(12, 3, None);
        let bytes = segment(&[batch.clone(), marker.clone()]);
        let options = DumpOptions {
            format: OutputFormat::Kafka,
            print_data_log: true,
            ..DumpOptions::new(OutputFormat::Kafka)
        };
        let (text, _) = dump_with(bytes.clone(), options);
        let expected = format!(
            "Dumping segment\n\
             baseOffset: 10 lastOffset: 11 count: 2 baseSequence: 0 lastSequence: 1 \
             producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 3 isTransactional: false \
             isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: {} \
             size: {} magic: 2 compresscodec: none crc: {} isvalid: true\n\
             | offset: 10 CreateTime: {T0} keySize: 2 valueSize: 2 sequence: 0 headerKeys: [] \
             key: k0 payload: v0\n\
             | offset: 11 CreateTime: {} keySize: -1 valueSize: 2 sequence: 1 headerKeys: [h] \
             payload: \u{0}\u{fffd}\n\
             baseOffset: 12 lastOffset: 12 count: 1 baseSequence: -1 lastSequence: -1 \
             producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 3 isTransactional: true \
             isControl: true deleteHorizonMs: OptionalLong.empty position: {} CreateTime: {} \
             size: 78 magic: 2 compresscodec: none crc: {} isvalid: true\n\
             | offset: 12 CreateTime: {} keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] \
             endTxnMarker: COMMIT coordinatorEpoch: 4\n",
            T0 + 5,
            batch.size_in_bytes(),
            batch.header().crc,
            T0 + 5,
            batch.size_in_bytes(),
            T0 + 9,
            marker.header().crc,
            T0 + 9,
        );
        assert_eq!(text, expected);
        // Without --print-data-log or --deep-iteration: batch lines only, as Kafka.
        let (shallow, _) = dump_to_string(bytes, OutputFormat::Kafka);
        assert_eq!(shallow.lines().count(), 3);
        assert!(!shallow.contains("| offset"));
    }

    #[test]
    fn kafka_layout_shows_a_delete_horizon_and_log_append_time() {
        let mut builder = BatchBuilder::default();
        builder.delete_horizon_ms = Some(T0 + 86_400_000);
        builder.log_append_time_ms = Some(T0 + 7);
        builder.append(T0, None, Some(Bytes::from_static(b"x")), Vec::new());
        let options = DumpOptions {
            format: OutputFormat::Kafka,
            deep_iteration: true,
            ..DumpOptions::new(OutputFormat::Kafka)
        };
        let (text, _) = dump_with(segment(&[builder.build()]), options);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[1].contains(&format!(
                " deleteHorizonMs: OptionalLong[{}] position: 0 LogAppendTime: {} ",
                T0 + 86_400_000,
                T0 + 7
            )),
            "{}",
            lines[1]
        );
        // Deep iteration without --print-data-log: metadata, no payload.
        assert_eq!(
            lines[2],
            format!(
                "| offset: 0 LogAppendTime: {} keySize: -1 valueSize: 1 sequence: -1 headerKeys: []",
                T0 + 7
            )
        );
    }

    #[test]
    fn kafka_preamble_names_segments_and_kraft_snapshots() {
        let cases = [
            ("00000000000000000042.log", Some("Log starting offset: 42")),
            (
                "00000000000000001200-0000000003.checkpoint",
                Some("Snapshot end offset: 1200, epoch: 3"),
            ),
            ("bootstrap.checkpoint", Some("KRaft bootstrap snapshot")),
            ("mixed.log", None),
        ];
        for (name, second) in cases {
            let mut out = Vec::new();
            write_kafka_preamble(&mut out, &Source::in_memory(name, 0)).unwrap();
            let text = String::from_utf8(out).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines[0], format!("Dumping {name}"));
            assert_eq!(lines.get(1).copied(), second, "{name}");
        }
    }

    #[test]
    fn missing_file_is_unreadable_and_names_the_file() {
        let path = Path::new("/nonexistent/mirrorsim/segment.log");
        let error = dump_file(path, DumpOptions::new(OutputFormat::Text), &mut Vec::new())
            .expect_err("missing");
        assert!(matches!(error, DumpError::Unreadable { .. }));
        assert!(error
            .to_string()
            .contains("/nonexistent/mirrorsim/segment.log"));
    }

    #[test]
    fn empty_segment_dumps_nothing() {
        let (text, summary) = dump_to_string(Bytes::new(), OutputFormat::Text);
        assert!(text.is_empty());
        assert_eq!(summary.batches, 0);
        assert!(summary.is_clean());
    }
}
