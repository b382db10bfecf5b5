//! A broker's disk: one directory per partition replica, each a [`LogDisk`].
//!
//! [`MemoryStorage`] keeps the directories in memory behind a shared handle, so the simulator
//! can own the disk (it outlives a killed broker process) and crash it: every directory loses or
//! tears its unflushed tail through [`MemoryDisk::crash`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use crate::log::{DiskError, LogDisk, MemoryDisk, TailFate};
use crate::protocol::TopicPartition;

/// The directories of one broker.
pub trait BrokerStorage {
    /// The disk of one partition directory.
    type Disk: LogDisk;
    /// Names of the existing partition directories, sorted.
    fn partition_dirs(&self) -> Vec<String>;
    /// Opens (creating if needed) a partition directory.
    fn open_dir(&mut self, dir: &str) -> Self::Disk;
    /// Deletes a partition directory and everything in it.
    fn remove_dir(&mut self, dir: &str);
}

/// Kafka's directory name for a partition: `<topic>-<partition>`.
pub fn partition_dir_name(topic_partition: &TopicPartition) -> String {
    format!("{}-{}", topic_partition.topic, topic_partition.partition)
}

/// Parses a partition directory name (the partition is after the last `-`).
pub fn parse_partition_dir_name(dir: &str) -> Option<TopicPartition> {
    let (topic, partition) = dir.rsplit_once('-')?;
    if topic.is_empty() {
        return None;
    }
    Some(TopicPartition::new(topic, partition.parse().ok()?))
}

type Directories = Arc<Mutex<BTreeMap<String, MemoryDisk>>>;

/// In-memory broker storage with a shared handle; clones share the same directories.
#[derive(Debug, Clone, Default)]
pub struct MemoryStorage {
    directories: Directories,
}

impl MemoryStorage {
    /// Empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, MemoryDisk>> {
        // A poisoned lock means a panic already happened; the simulation is over anyway.
        self.directories.lock().expect("storage lock poisoned")
    }

    /// Power failure on the whole broker disk; `fate(dir, file, tail_length)` decides what
    /// survives of every unflushed tail.
    pub fn crash(&self, mut fate: impl FnMut(&str, &str, usize) -> TailFate) {
        for (dir, disk) in self.lock().iter_mut() {
            disk.crash(|file, tail| fate(dir, file, tail));
        }
    }

    /// Total unflushed bytes over all directories.
    pub fn total_unflushed_bytes(&self) -> usize {
        self.lock()
            .values()
            .map(MemoryDisk::total_unflushed_bytes)
            .sum()
    }

    /// A copy of one directory's disk (for checkers and tests).
    pub fn snapshot_dir(&self, dir: &str) -> Option<MemoryDisk> {
        self.lock().get(dir).cloned()
    }
}

impl BrokerStorage for MemoryStorage {
    type Disk = MemoryDirDisk;

    fn partition_dirs(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    fn open_dir(&mut self, dir: &str) -> MemoryDirDisk {
        self.lock().entry(dir.to_string()).or_default();
        MemoryDirDisk {
            directories: Arc::clone(&self.directories),
            dir: dir.to_string(),
        }
    }

    fn remove_dir(&mut self, dir: &str) {
        self.lock().remove(dir);
    }
}

/// One directory of a [`MemoryStorage`].
#[derive(Debug, Clone)]
pub struct MemoryDirDisk {
    directories: Directories,
    dir: String,
}

impl MemoryDirDisk {
    fn with_disk<T>(
        &self,
        action: impl FnOnce(&mut MemoryDisk) -> Result<T, DiskError>,
    ) -> Result<T, DiskError> {
        let mut directories = self.directories.lock().expect("storage lock poisoned");
        match directories.get_mut(&self.dir) {
            Some(disk) => action(disk),
            None => Err(DiskError {
                file: self.dir.clone(),
                reason: "directory was removed".into(),
            }),
        }
    }
}

impl LogDisk for MemoryDirDisk {
    fn list_files(&self) -> Vec<String> {
        self.with_disk(|disk| Ok(disk.list_files()))
            .unwrap_or_default()
    }
    fn read_file(&self, name: &str) -> Result<Bytes, DiskError> {
        self.with_disk(|disk| disk.read_file(name))
    }
    fn create(&mut self, name: &str) -> Result<(), DiskError> {
        self.with_disk(|disk| disk.create(name))
    }
    fn append(&mut self, name: &str, data: &[u8]) -> Result<(), DiskError> {
        self.with_disk(|disk| disk.append(name, data))
    }
    fn truncate(&mut self, name: &str, length: u64) -> Result<(), DiskError> {
        self.with_disk(|disk| disk.truncate(name, length))
    }
    fn delete(&mut self, name: &str) -> Result<(), DiskError> {
        self.with_disk(|disk| disk.delete(name))
    }
    fn flush(&mut self, name: &str) -> Result<(), DiskError> {
        self.with_disk(|disk| disk.flush(name))
    }
    fn write_atomically(&mut self, name: &str, data: &[u8]) -> Result<(), DiskError> {
        self.with_disk(|disk| disk.write_atomically(name, data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_dir_names_round_trip_with_dashes_in_topic() {
        let tp = TopicPartition::new("orders-eu", 12);
        assert_eq!(partition_dir_name(&tp), "orders-eu-12");
        assert_eq!(parse_partition_dir_name("orders-eu-12"), Some(tp));
        assert_eq!(parse_partition_dir_name("nodash"), None);
        assert_eq!(parse_partition_dir_name("-3"), None);
    }

    #[test]
    fn memory_storage_directories_survive_handle_drop_and_crash_per_file() {
        let mut storage = MemoryStorage::new();
        let mut disk = storage.open_dir("t-0");
        disk.create("f").unwrap();
        disk.append("f", b"abc").unwrap();
        drop(disk);
        assert_eq!(storage.total_unflushed_bytes(), 3);
        storage.crash(|dir, file, tail| {
            assert_eq!((dir, file, tail), ("t-0", "f", 3));
            TailFate::LOST
        });
        let disk = storage.open_dir("t-0");
        assert_eq!(disk.read_file("f").unwrap().len(), 0);
    }
}
