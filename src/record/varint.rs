//! Zig-zag variable-length integers as Kafka's record format writes them.
//!
//! A varint is the zig-zag image of a signed 32-bit value written in unsigned base-128 groups,
//! least significant group first, with the continuation bit `0x80`. It is at most 5 bytes long; a
//! varlong is the same over 64 bits and at most 10 bytes long. Decoders never panic: a value that
//! runs past the end of the input or past its maximum width is an error.

use bytes::BufMut;

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The input ended before the last group (one without the continuation bit).
    Truncated,
    /// More groups than the type allows (5 for a varint, 10 for a varlong).
    TooLong,
}

/// Reads a zig-zag varint from the start of `input`; returns the value and the bytes consumed.
pub fn read_varint(input: &[u8]) -> Result<(i32, usize), VarintError> {
    let (raw, used) = read_unsigned(input, 5)?;
    if raw > u64::from(u32::MAX) {
        return Err(VarintError::TooLong);
    }
    let raw = raw as u32;
    Ok((((raw >> 1) as i32) ^ -((raw & 1) as i32), used))
}

/// Reads a zig-zag varlong from the start of `input`; returns the value and the bytes consumed.
pub fn read_varlong(input: &[u8]) -> Result<(i64, usize), VarintError> {
    let (raw, used) = read_unsigned(input, 10)?;
    Ok((((raw >> 1) as i64) ^ -((raw & 1) as i64), used))
}

fn read_unsigned(input: &[u8], max_bytes: usize) -> Result<(u64, usize), VarintError> {
    let mut value: u64 = 0;
    for (index, byte) in input.iter().take(max_bytes).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            return Ok((value, index + 1));
        }
    }
    if input.len() < max_bytes {
        Err(VarintError::Truncated)
    } else {
        Err(VarintError::TooLong)
    }
}

/// Appends `value` as a zig-zag varint.
pub fn write_varint(out: &mut impl BufMut, value: i32) {
    write_unsigned(out, u64::from(((value << 1) ^ (value >> 31)) as u32));
}

/// Appends `value` as a zig-zag varlong.
pub fn write_varlong(out: &mut impl BufMut, value: i64) {
    write_unsigned(out, ((value << 1) ^ (value >> 63)) as u64);
}

/// The number of bytes [`write_varint`] writes for `value`.
pub fn varint_size(value: i32) -> usize {
    unsigned_size(u64::from(((value << 1) ^ (value >> 31)) as u32))
}

/// The number of bytes [`write_varlong`] writes for `value`.
pub fn varlong_size(value: i64) -> usize {
    unsigned_size(((value << 1) ^ (value >> 63)) as u64)
}

fn write_unsigned(out: &mut impl BufMut, mut value: u64) {
    while value >= 0x80 {
        out.put_u8((value as u8) | 0x80);
        value >>= 7;
    }
    out.put_u8(value as u8);
}

fn unsigned_size(mut value: u64) -> usize {
    let mut size = 1;
    while value >= 0x80 {
        value >>= 7;
        size += 1;
    }
    size
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varint_examples_from_the_record_format() {
        for (value, encoded) in [
            (-1, vec![0x01]),
            (0, vec![0x00]),
            (1, vec![0x02]),
            (5, vec![0x0a]),
        ] {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            assert_eq!(out, encoded, "value {value}");
            assert_eq!(read_varint(&out), Ok((value, out.len())));
        }
    }

    #[test]
    fn varint_truncated_and_overlong_inputs_are_errors() {
        assert_eq!(read_varint(&[0x80]), Err(VarintError::Truncated));
        assert_eq!(read_varint(&[]), Err(VarintError::Truncated));
        assert_eq!(read_varint(&[0xff; 6]), Err(VarintError::TooLong));
        // Five groups whose value needs more than 32 bits.
        assert_eq!(
            read_varint(&[0xff, 0xff, 0xff, 0xff, 0x7f]),
            Err(VarintError::TooLong)
        );
        assert_eq!(read_varlong(&[0xff; 11]), Err(VarintError::TooLong));
    }

    proptest! {
        #[test]
        fn varint_round_trips(value: i32) {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            prop_assert_eq!(out.len(), varint_size(value));
            prop_assert_eq!(read_varint(&out), Ok((value, out.len())));
        }

        #[test]
        fn varlong_round_trips(value: i64) {
            let mut out = Vec::new();
            write_varlong(&mut out, value);
            prop_assert_eq!(out.len(), varlong_size(value));
            prop_assert_eq!(read_varlong(&out), Ok((value, out.len())));
        }
    }
}
