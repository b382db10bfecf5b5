//! Kafka's batch compression: the records region of a v2 batch whose attribute bits 0–2 name a
//! codec is one compressed stream of the records (the 61-byte header stays plain).
//!
//! Contract:
//! - [`decompress`] reads each codec's framing as Kafka's Java client reads it:
//!   - gzip: a gzip stream (`GZIPInputStream`); further members are read when the bytes after a
//!     member start with the gzip magic, anything else after a member is ignored, as Java does.
//!   - snappy: snappy-java's "xerial" framing, which Kafka's producer writes: the 8-byte magic
//!     `82 'SNAPPY' 00`, two big-endian int32 versions (the compatible one at least 1), then
//!     blocks of a big-endian int32 length and a raw snappy block; a repeated header is skipped
//!     (concatenated streams) and fewer than 4 bytes after a block end the stream. Input without
//!     the magic (or shorter than the 16-byte header) is one raw snappy block, as
//!     `SnappyInputStream` falls back to.
//!   - lz4: one LZ4 frame as Kafka's `Lz4BlockInputStream` reads it: version 1, independent
//!     blocks (Kafka refuses linked ones), no dictionary, a block maximum of 64 KiB–4 MiB, the
//!     header checksum verified (magic v2 batches always carry a correct one, KIP-57), block and
//!     content checksums verified when flagged; bytes after the end mark are ignored.
//!   - zstd: zstd frames, read to the end of the input.
//! - Decompression never panics and never produces more than the caller's limit: past it the
//!   result is [`DecompressFailure::TooLarge`], so a small batch that inflates to gigabytes (a
//!   decompression bomb) costs at most the limit. Every error names the byte offset in the
//!   compressed payload where it was found (the start of the gzip member or zstd stream when
//!   the library does not say where).
//! - [`compress`] writes what Kafka's Java producer writes for each codec (gzip at the default
//!   level, xerial snappy with 32 KiB blocks, an LZ4 frame of independent 64 KiB blocks with the
//!   header checksum only, zstd at level 3), so [`decompress`] of its output gives the input back.

use std::io::{self, Read, Write};

use super::CompressionType;

/// Largest decompressed records region [`decompress`] is asked to produce by the batch decoder:
/// 128 MiB, far above what a Kafka batch holds (`message.max.bytes` is 1 MiB by default, and
/// producers rarely reach a 100× ratio), far below what would hurt the process.
pub const DEFAULT_DECOMPRESSED_LIMIT: usize = 128 << 20;

/// A compressed payload that did not decompress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecompressError {
    /// Byte offset in the compressed payload where the problem was found.
    pub offset: usize,
    /// What was wrong.
    pub failure: DecompressFailure,
}

/// The ways decompression fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecompressFailure {
    /// The payload violates the codec's format (the reason says how).
    Corrupt(String),
    /// The payload inflates past the limit given to [`decompress`].
    TooLarge {
        /// The limit, in decompressed bytes.
        limit: usize,
    },
    /// Attribute bits 0–2 hold 5, 6 or 7, which name no codec.
    UnknownCodec(u8),
}

impl DecompressError {
    fn corrupt(offset: usize, reason: impl Into<String>) -> Self {
        Self {
            offset,
            failure: DecompressFailure::Corrupt(reason.into()),
        }
    }

    fn too_large(offset: usize, limit: usize) -> Self {
        Self {
            offset,
            failure: DecompressFailure::TooLarge { limit },
        }
    }
}

/// Decompresses a batch's records region written with `codec`, producing at most `limit` bytes.
/// `CompressionType::None` returns the payload as it is.
pub fn decompress(
    codec: CompressionType,
    payload: &[u8],
    limit: usize,
) -> Result<Vec<u8>, DecompressError> {
    if payload.is_empty() && codec != CompressionType::None {
        // Every codec's stream has at least a header; Java's readers fail on an empty one too.
        return Err(DecompressError::corrupt(0, "empty compressed stream"));
    }
    match codec {
        CompressionType::None if payload.len() > limit => Err(DecompressError::too_large(0, limit)),
        CompressionType::None => Ok(payload.to_vec()),
        CompressionType::Gzip => gzip::decompress(payload, limit),
        CompressionType::Snappy => snappy::decompress(payload, limit),
        CompressionType::Lz4 => lz4::decompress(payload, limit),
        CompressionType::Zstd => zstd_codec::decompress(payload, limit),
        CompressionType::Unknown(id) => Err(DecompressError {
            offset: 0,
            failure: DecompressFailure::UnknownCodec(id),
        }),
    }
}

/// [`decompress`] for the value of a magic 0 message (a legacy message set's wrapper): Kafka
/// 0.8–0.9 computed the LZ4 frame descriptor's checksum over the magic number too, so Kafka's
/// reader ignores that checksum for magic 0 (KAFKA-3160's `ignoreFlagDescriptorChecksum`);
/// every other codec and check is [`decompress`]'s.
pub fn decompress_magic_v0(
    codec: CompressionType,
    payload: &[u8],
    limit: usize,
) -> Result<Vec<u8>, DecompressError> {
    match codec {
        CompressionType::Lz4 if !payload.is_empty() => lz4::decompress_frame(payload, limit, false),
        _ => decompress(codec, payload, limit),
    }
}

/// Compresses a records region with `codec` as Kafka's Java producer does (see the module doc).
/// `CompressionType::None` returns the bytes as they are.
///
/// Panics for `CompressionType::Unknown`: naming a codec that does not exist is a programming
/// error of the caller, not bad input.
pub fn compress(codec: CompressionType, raw: &[u8]) -> Vec<u8> {
    match codec {
        CompressionType::None => raw.to_vec(),
        CompressionType::Gzip => gzip::compress(raw),
        CompressionType::Snappy => snappy::compress(raw),
        CompressionType::Lz4 => lz4::compress(raw),
        CompressionType::Zstd => zstd_codec::compress(raw),
        CompressionType::Unknown(id) => panic!("no compression codec has id {id}"),
    }
}

/// Reads `reader` to its end into `out`, failing once `out` would hold more than `limit` bytes.
/// Reads in fixed chunks so that a bomb never gets more than one chunk past the limit.
fn read_bounded(
    mut reader: impl Read,
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), ReadBoundedError> {
    let mut chunk = [0u8; 32 * 1024];
    loop {
        let read = match reader.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(ReadBoundedError::Io(error)),
        };
        if out.len() + read > limit {
            return Err(ReadBoundedError::TooLarge);
        }
        out.extend_from_slice(&chunk[..read]);
    }
}

enum ReadBoundedError {
    Io(io::Error),
    TooLarge,
}

impl ReadBoundedError {
    fn at(self, offset: usize, codec: &str, limit: usize) -> DecompressError {
        match self {
            Self::Io(error) => DecompressError::corrupt(offset, format!("{codec}: {error}")),
            Self::TooLarge => DecompressError::too_large(offset, limit),
        }
    }
}

mod gzip {
    use super::*;
    use flate2::bufread::GzDecoder;
    use flate2::write::GzEncoder;

    const MAGIC: [u8; 2] = [0x1f, 0x8b];

    pub(super) fn decompress(payload: &[u8], limit: usize) -> Result<Vec<u8>, DecompressError> {
        let mut out = Vec::new();
        let mut rest = payload;
        loop {
            let member_at = payload.len() - rest.len();
            // `bufread::GzDecoder` over a slice consumes exactly one member, trailer included, so
            // what is left afterwards is what follows the member.
            let mut decoder = GzDecoder::new(rest);
            read_bounded(&mut decoder, &mut out, limit)
                .map_err(|error| error.at(member_at, "gzip", limit))?;
            rest = decoder.into_inner();
            if !rest.starts_with(&MAGIC) {
                // Java's GZIPInputStream reads concatenated members and ignores other trailing
                // bytes; Kafka inherits both.
                return Ok(out);
            }
        }
    }

    pub(super) fn compress(raw: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder
            .write_all(raw)
            .and_then(|()| encoder.finish())
            .expect("writing to a Vec cannot fail")
    }
}

mod snappy {
    use super::*;

    /// snappy-java's stream magic: `0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00`.
    const MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
    /// Magic plus the two int32 versions.
    const HEADER_SIZE: usize = 16;
    /// The oldest stream version snappy-java reads.
    const MINIMUM_COMPATIBLE_VERSION: i32 = 1;
    /// Version and compatible version snappy-java writes.
    const WRITTEN_VERSION: i32 = 1;
    /// snappy-java's default block size, which Kafka's producer keeps.
    const BLOCK_SIZE: usize = 32 * 1024;

    pub(super) fn decompress(payload: &[u8], limit: usize) -> Result<Vec<u8>, DecompressError> {
        let mut out = Vec::new();
        if payload.len() < HEADER_SIZE || !payload.starts_with(&MAGIC) {
            // Not a snappy-java stream: `SnappyInputStream` reads it as one raw block.
            raw_block(payload, 0, &mut out, limit)?;
            return Ok(out);
        }
        check_header(payload, 0)?;
        let mut at = HEADER_SIZE;
        // Fewer than 4 bytes cannot hold a block length; snappy-java ends the stream there.
        while payload.len() - at >= 4 {
            let length = be_i32(payload, at);
            if payload[at..].starts_with(&MAGIC) {
                // Concatenated streams: a second header where a block length was expected.
                if payload.len() - at < HEADER_SIZE {
                    return Err(DecompressError::corrupt(
                        at,
                        "snappy: truncated stream header in a concatenated stream",
                    ));
                }
                check_header(payload, at)?;
                at += HEADER_SIZE;
                continue;
            }
            if length < 0 {
                return Err(DecompressError::corrupt(
                    at,
                    format!("snappy: negative block length {length}"),
                ));
            }
            let block_at = at + 4;
            let length = length as usize;
            let block = payload.get(block_at..block_at + length).ok_or_else(|| {
                DecompressError::corrupt(
                    at,
                    format!(
                        "snappy: block length {length} runs past the payload ({} bytes left)",
                        payload.len() - block_at
                    ),
                )
            })?;
            raw_block(block, block_at, &mut out, limit)?;
            at = block_at + length;
        }
        Ok(out)
    }

    /// Checks the 16-byte header at `at`: the magic was matched, the compatible version must be
    /// one snappy-java reads.
    fn check_header(payload: &[u8], at: usize) -> Result<(), DecompressError> {
        let compatible = be_i32(payload, at + 12);
        if compatible < MINIMUM_COMPATIBLE_VERSION {
            return Err(DecompressError::corrupt(
                at + 12,
                format!("snappy: incompatible stream version {compatible}"),
            ));
        }
        Ok(())
    }

    /// Appends one raw snappy block, whose declared length is checked against the limit before
    /// anything is allocated.
    fn raw_block(
        block: &[u8],
        at: usize,
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), DecompressError> {
        let corrupt = |error: snap::Error| DecompressError::corrupt(at, format!("snappy: {error}"));
        let length = snap::raw::decompress_len(block).map_err(corrupt)?;
        if out.len().saturating_add(length) > limit {
            return Err(DecompressError::too_large(at, limit));
        }
        let start = out.len();
        out.resize(start + length, 0);
        let written = snap::raw::Decoder::new()
            .decompress(block, &mut out[start..])
            .map_err(corrupt)?;
        if written != length {
            return Err(DecompressError::corrupt(
                at,
                format!("snappy: block declares {length} bytes but holds {written}"),
            ));
        }
        Ok(())
    }

    pub(super) fn compress(raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_SIZE + raw.len() / 2);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&WRITTEN_VERSION.to_be_bytes());
        out.extend_from_slice(&WRITTEN_VERSION.to_be_bytes());
        let mut encoder = snap::raw::Encoder::new();
        for block in raw.chunks(BLOCK_SIZE) {
            let compressed = encoder
                .compress_vec(block)
                .expect("a 32 KiB block is within snappy's input limit");
            out.extend_from_slice(&(compressed.len() as i32).to_be_bytes());
            out.extend_from_slice(&compressed);
        }
        out
    }

    fn be_i32(bytes: &[u8], at: usize) -> i32 {
        i32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
    }
}

mod lz4 {
    use super::*;
    use std::hash::Hasher;
    use twox_hash::XxHash32;

    const MAGIC: u32 = 0x184D_2204;
    const FLG_VERSION_MASK: u8 = 0xC0;
    const FLG_VERSION_1: u8 = 0x40;
    const FLG_BLOCK_INDEPENDENCE: u8 = 0x20;
    const FLG_BLOCK_CHECKSUM: u8 = 0x10;
    const FLG_CONTENT_SIZE: u8 = 0x08;
    const FLG_CONTENT_CHECKSUM: u8 = 0x04;
    /// Bit 1 is reserved; bit 0 (a dictionary id) is one Kafka's reader treats as reserved too.
    const FLG_RESERVED: u8 = 0x03;
    const BD_RESERVED: u8 = 0x8F;
    /// High bit of a block size: the block is stored uncompressed.
    const UNCOMPRESSED_BIT: u32 = 0x8000_0000;
    /// Kafka's producer writes 64 KiB blocks (BD block-size id 4).
    const WRITTEN_BLOCK_SIZE: usize = 64 * 1024;
    const WRITTEN_FLG: u8 = FLG_VERSION_1 | FLG_BLOCK_INDEPENDENCE;
    const WRITTEN_BD: u8 = 4 << 4;

    /// The frame descriptor, as far as reading the blocks needs it.
    struct Descriptor {
        flags: u8,
        max_block_size: usize,
        /// Offset of the first block.
        end: usize,
    }

    pub(super) fn decompress(payload: &[u8], limit: usize) -> Result<Vec<u8>, DecompressError> {
        decompress_frame(payload, limit, true)
    }

    /// [`decompress`], with the frame descriptor's checksum checked only when
    /// `checks_descriptor` (Kafka's reader skips it for magic 0 messages: KAFKA-3160).
    pub(super) fn decompress_frame(
        payload: &[u8],
        limit: usize,
        checks_descriptor: bool,
    ) -> Result<Vec<u8>, DecompressError> {
        let descriptor = read_descriptor(payload, checks_descriptor)?;
        let mut out = Vec::new();
        let mut content_hash = XxHash32::with_seed(0);
        let mut at = descriptor.end;
        loop {
            let size_field = le_u32(payload, at).ok_or_else(|| premature_end(payload, at))?;
            let block_at = at + 4;
            if size_field == 0 {
                // End mark: Kafka reads one frame and ignores what follows it.
                check_content_checksum(payload, block_at, &descriptor, &content_hash)?;
                return Ok(out);
            }
            let size = (size_field & !UNCOMPRESSED_BIT) as usize;
            if size > descriptor.max_block_size {
                return Err(DecompressError::corrupt(
                    at,
                    format!(
                        "lz4: block size {size} exceeds the frame's maximum {}",
                        descriptor.max_block_size
                    ),
                ));
            }
            let block = payload
                .get(block_at..block_at + size)
                .ok_or_else(|| premature_end(payload, at))?;
            let start = out.len();
            if size_field & UNCOMPRESSED_BIT != 0 {
                if start + size > limit {
                    return Err(DecompressError::too_large(at, limit));
                }
                out.extend_from_slice(block);
            } else {
                decompress_block(block, block_at, &descriptor, &mut out, limit)?;
            }
            content_hash.write(&out[start..]);
            at = block_at + size;
            if descriptor.flags & FLG_BLOCK_CHECKSUM != 0 {
                let stored = le_u32(payload, at).ok_or_else(|| premature_end(payload, at))?;
                if stored != XxHash32::oneshot(0, block) {
                    return Err(DecompressError::corrupt(at, "lz4: block checksum mismatch"));
                }
                at += 4;
            }
        }
    }

    /// Reads and checks the frame descriptor the way Kafka's reader does.
    fn read_descriptor(
        payload: &[u8],
        checks_descriptor: bool,
    ) -> Result<Descriptor, DecompressError> {
        if payload.len() < 7 {
            return Err(premature_end(payload, 0));
        }
        if le_u32(payload, 0) != Some(MAGIC) {
            return Err(DecompressError::corrupt(
                0,
                "lz4: not an LZ4 frame (bad magic number)",
            ));
        }
        let flags = payload[4];
        let bd = payload[5];
        if flags & FLG_VERSION_MASK != FLG_VERSION_1 {
            return Err(DecompressError::corrupt(
                4,
                format!("lz4: frame version {} is unsupported", flags >> 6),
            ));
        }
        if flags & FLG_RESERVED != 0 {
            return Err(DecompressError::corrupt(
                4,
                "lz4: reserved FLG bits are set",
            ));
        }
        if flags & FLG_BLOCK_INDEPENDENCE == 0 {
            return Err(DecompressError::corrupt(
                4,
                "lz4: dependent (linked) blocks are unsupported, as in Kafka",
            ));
        }
        let size_id = (bd >> 4) & 0x07;
        if bd & BD_RESERVED != 0 || size_id < 4 {
            return Err(DecompressError::corrupt(
                5,
                format!("lz4: invalid block descriptor 0x{bd:02x}"),
            ));
        }
        let checksum_at = if flags & FLG_CONTENT_SIZE != 0 { 14 } else { 6 };
        let stored = *payload
            .get(checksum_at)
            .ok_or_else(|| premature_end(payload, checksum_at))?;
        let computed = (XxHash32::oneshot(0, &payload[4..checksum_at]) >> 8) as u8;
        if checks_descriptor && stored != computed {
            return Err(DecompressError::corrupt(
                checksum_at,
                format!("lz4: frame descriptor checksum 0x{stored:02x}, computed 0x{computed:02x}"),
            ));
        }
        Ok(Descriptor {
            flags,
            // Ids 4..=7 are 64 KiB, 256 KiB, 1 MiB and 4 MiB.
            max_block_size: 1 << (8 + 2 * usize::from(size_id)),
            end: checksum_at + 1,
        })
    }

    /// Appends one compressed block; at most the frame's block maximum, checked against the
    /// limit before it is produced.
    fn decompress_block(
        block: &[u8],
        at: usize,
        descriptor: &Descriptor,
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), DecompressError> {
        let start = out.len();
        let room = descriptor.max_block_size.min(limit.saturating_sub(start));
        out.resize(start + room, 0);
        match lz4_flex::block::decompress_into(block, &mut out[start..]) {
            Ok(written) => {
                out.truncate(start + written);
                Ok(())
            }
            // The block did not fit: past the limit if the limit, not the block maximum, was
            // the room it had.
            Err(lz4_flex::block::DecompressError::OutputTooSmall { .. })
                if room < descriptor.max_block_size =>
            {
                Err(DecompressError::too_large(at, limit))
            }
            Err(error) => Err(DecompressError::corrupt(at, format!("lz4: {error}"))),
        }
    }

    fn check_content_checksum(
        payload: &[u8],
        at: usize,
        descriptor: &Descriptor,
        content_hash: &XxHash32,
    ) -> Result<(), DecompressError> {
        if descriptor.flags & FLG_CONTENT_CHECKSUM == 0 {
            return Ok(());
        }
        let stored = le_u32(payload, at).ok_or_else(|| premature_end(payload, at))?;
        if stored != content_hash.finish_32() {
            return Err(DecompressError::corrupt(
                at,
                "lz4: content checksum mismatch",
            ));
        }
        Ok(())
    }

    /// The stream ends inside the field or block that starts at `at` (the end of the payload
    /// when the field itself would start past it).
    fn premature_end(payload: &[u8], at: usize) -> DecompressError {
        DecompressError::corrupt(at.min(payload.len()), "lz4: stream ended prematurely")
    }

    fn le_u32(bytes: &[u8], at: usize) -> Option<u32> {
        let raw = bytes.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]))
    }

    pub(super) fn compress(raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + raw.len());
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.push(WRITTEN_FLG);
        out.push(WRITTEN_BD);
        out.push((XxHash32::oneshot(0, &[WRITTEN_FLG, WRITTEN_BD]) >> 8) as u8);
        for block in raw.chunks(WRITTEN_BLOCK_SIZE) {
            let compressed = lz4_flex::block::compress(block);
            // As the LZ4 frame format allows, a block that does not shrink is stored as it is.
            if compressed.len() < block.len() {
                out.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
                out.extend_from_slice(&compressed);
            } else {
                out.extend_from_slice(&(block.len() as u32 | UNCOMPRESSED_BIT).to_le_bytes());
                out.extend_from_slice(block);
            }
        }
        out.extend_from_slice(&0u32.to_le_bytes());
        out
    }
}

mod zstd_codec {
    use super::*;

    /// Kafka's default zstd level (`compression.zstd.level`).
    const LEVEL: i32 = 3;

    pub(super) fn decompress(payload: &[u8], limit: usize) -> Result<Vec<u8>, DecompressError> {
        let mut out = Vec::new();
        let decoder = zstd::stream::read::Decoder::with_buffer(payload)
            .map_err(|error| DecompressError::corrupt(0, format!("zstd: {error}")))?;
        read_bounded(decoder, &mut out, limit).map_err(|error| error.at(0, "zstd", limit))?;
        Ok(out)
    }

    pub(super) fn compress(raw: &[u8]) -> Vec<u8> {
        zstd::stream::encode_all(raw, LEVEL).expect("zstd compression of a buffer cannot fail")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODECS: [CompressionType; 4] = [
        CompressionType::Gzip,
        CompressionType::Snappy,
        CompressionType::Lz4,
        CompressionType::Zstd,
    ];

    /// Compressible and not: 200 KiB of text (several snappy and lz4 blocks), then noise.
    fn sample() -> Vec<u8> {
        let mut bytes: Vec<u8> = (0..200 * 1024).map(|i| b"kafka-"[i % 6]).collect();
        let mut state = 0x2545_f491u32;
        bytes.extend((0..70_000).map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        }));
        bytes
    }

    #[test]
    fn every_codec_round_trips() {
        let raw = sample();
        for codec in CODECS {
            let compressed = compress(codec, &raw);
            assert_ne!(compressed, raw, "{codec:?}");
            assert_eq!(decompress(codec, &compressed, raw.len()), Ok(raw.clone()));
        }
    }

    #[test]
    fn the_limit_is_enforced_for_every_codec() {
        let raw = sample();
        for codec in CODECS {
            let compressed = compress(codec, &raw);
            let error = decompress(codec, &compressed, raw.len() - 1).expect_err("over limit");
            assert_eq!(
                error.failure,
                DecompressFailure::TooLarge {
                    limit: raw.len() - 1
                },
                "{codec:?}"
            );
        }
    }

    #[test]
    fn empty_and_unknown_are_errors() {
        for codec in CODECS {
            assert!(matches!(
                decompress(codec, &[], 100),
                Err(DecompressError {
                    offset: 0,
                    failure: DecompressFailure::Corrupt(_)
                })
            ));
        }
        assert_eq!(
            decompress(CompressionType::Unknown(6), b"x", 100)
                .expect_err("unknown")
                .failure,
            DecompressFailure::UnknownCodec(6)
        );
    }

    #[test]
    fn snappy_reads_a_raw_block_and_concatenated_streams() {
        let raw = sample();
        let block = snap::raw::Encoder::new()
            .compress_vec(&raw[..1000])
            .unwrap();
        assert_eq!(
            decompress(CompressionType::Snappy, &block, 1 << 20),
            Ok(raw[..1000].to_vec())
        );
        let mut twice = compress(CompressionType::Snappy, &raw[..5000]);
        twice.extend(compress(CompressionType::Snappy, &raw[5000..9000]));
        // Three stray bytes after the last block end the stream, as in snappy-java.
        twice.extend([1, 2, 3]);
        assert_eq!(
            decompress(CompressionType::Snappy, &twice, 1 << 20),
            Ok(raw[..9000].to_vec())
        );
    }

    #[test]
    fn snappy_framing_errors_name_their_offset() {
        let mut stream = compress(CompressionType::Snappy, b"hello hello hello hello");
        stream[16..20].copy_from_slice(&1000i32.to_be_bytes());
        let error = decompress(CompressionType::Snappy, &stream, 1 << 20).expect_err("past end");
        assert_eq!(error.offset, 16);
        stream[16..20].copy_from_slice(&(-2i32).to_be_bytes());
        let error = decompress(CompressionType::Snappy, &stream, 1 << 20).expect_err("negative");
        assert_eq!(error.offset, 16);
        let mut stream = compress(CompressionType::Snappy, b"abc");
        stream[12..16].copy_from_slice(&0i32.to_be_bytes());
        let error = decompress(CompressionType::Snappy, &stream, 1 << 20).expect_err("version");
        assert_eq!(error.offset, 12);
    }

    #[test]
    fn snappy_declared_length_is_checked_before_allocating() {
        // A raw block whose length varint claims 2^32 - 1 bytes and holds none.
        let block = [0xff, 0xff, 0xff, 0xff, 0x0f, 0x00];
        let error = decompress(CompressionType::Snappy, &block, 1 << 20).expect_err("bomb");
        assert_eq!(
            error.failure,
            DecompressFailure::TooLarge { limit: 1 << 20 }
        );
    }

    #[test]
    fn lz4_header_rules_follow_kafka() {
        let frame = compress(CompressionType::Lz4, b"records records records");
        assert_eq!(&frame[4..7], &[0x60, 0x40, 0x82]);
        let expect_at = |frame: &[u8], offset: usize| {
            let error = decompress(CompressionType::Lz4, frame, 1 << 20).expect_err("refused");
            assert_eq!(error.offset, offset, "{error:?}");
        };
        let mut linked = frame.clone();
        linked[4] = 0x40;
        expect_at(&linked, 4);
        let mut bad_checksum = frame.clone();
        bad_checksum[6] ^= 1;
        expect_at(&bad_checksum, 6);
        let mut bad_magic = frame.clone();
        bad_magic[0] = 0;
        expect_at(&bad_magic, 0);
        let mut small_blocks = frame.clone();
        small_blocks[5] = 3 << 4;
        expect_at(&small_blocks, 5);
        expect_at(&frame[..frame.len() - 2], frame.len() - 4);
        // Bytes after the end mark are ignored, as Kafka's reader never looks at them.
        let mut trailing = frame.clone();
        trailing.extend([9, 9, 9]);
        assert_eq!(
            decompress(CompressionType::Lz4, &trailing, 1 << 20),
            Ok(b"records records records".to_vec())
        );
    }

    #[test]
    fn gzip_reads_concatenated_members_and_ignores_other_trailing_bytes() {
        let mut stream = compress(CompressionType::Gzip, b"first ");
        stream.extend(compress(CompressionType::Gzip, b"second"));
        stream.extend(b"not gzip");
        assert_eq!(
            decompress(CompressionType::Gzip, &stream, 1 << 20),
            Ok(b"first second".to_vec())
        );
        let first_len = compress(CompressionType::Gzip, b"first ").len();
        let mut broken = stream.clone();
        broken[first_len + 12] ^= 0xff;
        let error = decompress(CompressionType::Gzip, &broken, 1 << 20).expect_err("bad member");
        assert_eq!(error.offset, first_len);
    }

    #[test]
    fn a_zstd_bomb_stops_at_the_limit() {
        // 160 MiB of zeros compresses to a few kilobytes.
        let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..160 {
            encoder.write_all(&zeros).unwrap();
        }
        let bomb = encoder.finish().unwrap();
        assert!(bomb.len() < 1 << 20);
        let error =
            decompress(CompressionType::Zstd, &bomb, DEFAULT_DECOMPRESSED_LIMIT).expect_err("bomb");
        assert_eq!(
            error.failure,
            DecompressFailure::TooLarge {
                limit: DEFAULT_DECOMPRESSED_LIMIT
            }
        );
    }
}
