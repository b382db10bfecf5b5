//! The disk a partition log writes through, and an in-memory model of it with Kafka-relevant
//! crash semantics.
//!
//! [`LogDisk`] is one partition directory: named files that can be created, appended to,
//! truncated, deleted, flushed (fsync) and replaced atomically. Reads see every byte written,
//! flushed or not, as reads through the page cache do.
//!
//! [`MemoryDisk`] remembers, per file, how many bytes are durable. [`MemoryDisk::crash`] models a
//! power failure: each file keeps its durable prefix plus a caller-chosen part of its unflushed
//! tail, optionally with one corrupted byte (a torn write). The caller supplies those choices so
//! that the model stays deterministic: the simulator draws them from its seeded RNG. Metadata
//! operations (create, delete, truncate, atomic replace) are modelled as durable at once, like a
//! journaling file system; only appended data can be lost.

use std::collections::BTreeMap;
use std::fmt;

use bytes::Bytes;

/// A failed disk operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskError {
    /// The file involved.
    pub file: String,
    /// What went wrong.
    pub reason: String,
}

impl fmt::Display for DiskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "disk error on {}: {}", self.file, self.reason)
    }
}

impl std::error::Error for DiskError {}

/// One partition directory. File names are plain names without separators.
pub trait LogDisk {
    /// Names of the files in the directory, sorted.
    fn list_files(&self) -> Vec<String>;
    /// The whole content of `name` as the process sees it (flushed or not).
    fn read_file(&self, name: &str) -> Result<Bytes, DiskError>;
    /// Creates `name` empty if it does not exist.
    fn create(&mut self, name: &str) -> Result<(), DiskError>;
    /// Appends `data` to the existing file `name`.
    fn append(&mut self, name: &str, data: &[u8]) -> Result<(), DiskError>;
    /// Cuts `name` to `length` bytes.
    fn truncate(&mut self, name: &str, length: u64) -> Result<(), DiskError>;
    /// Removes `name`.
    fn delete(&mut self, name: &str) -> Result<(), DiskError>;
    /// Makes every byte written to `name` durable (fsync).
    fn flush(&mut self, name: &str) -> Result<(), DiskError>;
    /// Replaces `name` with `data` durably and atomically (write a temp file, fsync, rename).
    fn write_atomically(&mut self, name: &str, data: &[u8]) -> Result<(), DiskError>;
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct MemoryFile {
    data: Vec<u8>,
    /// Bytes `[0, durable_length)` survive a crash.
    durable_length: usize,
}

/// What survives of one file's unflushed tail in a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailFate {
    /// How many bytes of the unflushed tail survive (clamped to the tail's length).
    pub kept_bytes: usize,
    /// Optionally `(index within the kept tail, xor mask)`: a torn write leaves garbage there.
    pub corruption: Option<(usize, u8)>,
}

impl TailFate {
    /// The whole unflushed tail is lost.
    pub const LOST: Self = Self {
        kept_bytes: 0,
        corruption: None,
    };
}

/// An in-memory [`LogDisk`] that knows which bytes are durable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryDisk {
    files: BTreeMap<String, MemoryFile>,
}

impl MemoryDisk {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Unflushed bytes of `name` (0 for a missing file).
    pub fn unflushed_bytes(&self, name: &str) -> usize {
        self.files
            .get(name)
            .map_or(0, |file| file.data.len() - file.durable_length)
    }

    /// Total unflushed bytes in the directory.
    pub fn total_unflushed_bytes(&self) -> usize {
        self.files
            .values()
            .map(|file| file.data.len() - file.durable_length)
            .sum()
    }

    /// Power failure. For every file with an unflushed tail, `fate(name, tail_length)` decides
    /// how much of the tail survives and whether a byte of it is torn. Afterwards everything
    /// that is left counts as durable.
    pub fn crash(&mut self, mut fate: impl FnMut(&str, usize) -> TailFate) {
        for (name, file) in self.files.iter_mut() {
            let tail_length = file.data.len() - file.durable_length;
            if tail_length == 0 {
                continue;
            }
            let choice = fate(name, tail_length);
            let kept = choice.kept_bytes.min(tail_length);
            file.data.truncate(file.durable_length + kept);
            if let Some((index, mask)) = choice.corruption {
                if index < kept {
                    file.data[file.durable_length + index] ^= mask;
                }
            }
            file.durable_length = file.data.len();
        }
    }

    /// Overwrites one byte (for tests that corrupt durable data on purpose).
    pub fn corrupt_byte(&mut self, name: &str, position: usize, mask: u8) -> bool {
        match self.files.get_mut(name) {
            Some(file) if position < file.data.len() => {
                file.data[position] ^= mask;
                true
            }
            _ => false,
        }
    }

    fn file_mut(&mut self, name: &str) -> Result<&mut MemoryFile, DiskError> {
        self.files.get_mut(name).ok_or_else(|| not_found(name))
    }
}

fn not_found(name: &str) -> DiskError {
    DiskError {
        file: name.to_string(),
        reason: "no such file".to_string(),
    }
}

impl LogDisk for MemoryDisk {
    fn list_files(&self) -> Vec<String> {
        self.files.keys().cloned().collect()
    }

    fn read_file(&self, name: &str) -> Result<Bytes, DiskError> {
        let file = self.files.get(name).ok_or_else(|| not_found(name))?;
        Ok(Bytes::copy_from_slice(&file.data))
    }

    fn create(&mut self, name: &str) -> Result<(), DiskError> {
        self.files.entry(name.to_string()).or_default();
        Ok(())
    }

    fn append(&mut self, name: &str, data: &[u8]) -> Result<(), DiskError> {
        self.file_mut(name)?.data.extend_from_slice(data);
        Ok(())
    }

    fn truncate(&mut self, name: &str, length: u64) -> Result<(), DiskError> {
        let file = self.file_mut(name)?;
        let length = usize::try_from(length).unwrap_or(usize::MAX);
        if length < file.data.len() {
            file.data.truncate(length);
        }
        file.durable_length = file.durable_length.min(file.data.len());
        Ok(())
    }

    fn delete(&mut self, name: &str) -> Result<(), DiskError> {
        self.files
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| not_found(name))
    }

    fn flush(&mut self, name: &str) -> Result<(), DiskError> {
        let file = self.file_mut(name)?;
        file.durable_length = file.data.len();
        Ok(())
    }

    fn write_atomically(&mut self, name: &str, data: &[u8]) -> Result<(), DiskError> {
        self.files.insert(
            name.to_string(),
            MemoryFile {
                data: data.to_vec(),
                durable_length: data.len(),
            },
        );
        Ok(())
    }
}

impl<T: LogDisk + ?Sized> LogDisk for Box<T> {
    fn list_files(&self) -> Vec<String> {
        (**self).list_files()
    }
    fn read_file(&self, name: &str) -> Result<Bytes, DiskError> {
        (**self).read_file(name)
    }
    fn create(&mut self, name: &str) -> Result<(), DiskError> {
        (**self).create(name)
    }
    fn append(&mut self, name: &str, data: &[u8]) -> Result<(), DiskError> {
        (**self).append(name, data)
    }
    fn truncate(&mut self, name: &str, length: u64) -> Result<(), DiskError> {
        (**self).truncate(name, length)
    }
    fn delete(&mut self, name: &str) -> Result<(), DiskError> {
        (**self).delete(name)
    }
    fn flush(&mut self, name: &str) -> Result<(), DiskError> {
        (**self).flush(name)
    }
    fn write_atomically(&mut self, name: &str, data: &[u8]) -> Result<(), DiskError> {
        (**self).write_atomically(name, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_crash_keeps_flushed_bytes_and_applies_tail_fate() {
        let mut disk = MemoryDisk::new();
        disk.create("a").unwrap();
        disk.append("a", b"durable").unwrap();
        disk.flush("a").unwrap();
        disk.append("a", b"-tail").unwrap();
        disk.create("b").unwrap();
        disk.append("b", b"lost").unwrap();
        assert_eq!(disk.unflushed_bytes("a"), 5);
        disk.crash(|name, tail| {
            if name == "a" {
                assert_eq!(tail, 5);
                TailFate {
                    kept_bytes: 3,
                    corruption: Some((1, 0xff)),
                }
            } else {
                TailFate::LOST
            }
        });
        let a = disk.read_file("a").unwrap();
        assert_eq!(&a[..7], b"durable");
        assert_eq!(a.len(), 10);
        assert_eq!(a[8], b't' ^ 0xff);
        assert_eq!(disk.read_file("b").unwrap().len(), 0);
        assert_eq!(disk.total_unflushed_bytes(), 0);
    }

    #[test]
    fn disk_truncate_below_durable_length_moves_it_down() {
        let mut disk = MemoryDisk::new();
        disk.create("a").unwrap();
        disk.append("a", b"0123456789").unwrap();
        disk.flush("a").unwrap();
        disk.truncate("a", 4).unwrap();
        disk.append("a", b"xy").unwrap();
        assert_eq!(disk.unflushed_bytes("a"), 2);
        disk.crash(|_, _| TailFate::LOST);
        assert_eq!(&disk.read_file("a").unwrap()[..], b"0123");
    }

    #[test]
    fn disk_operations_on_missing_files_are_errors() {
        let mut disk = MemoryDisk::new();
        assert!(disk.append("x", b"1").is_err());
        assert!(disk.read_file("x").is_err());
        assert!(disk.delete("x").is_err());
        assert!(disk.flush("x").is_err());
    }
}
