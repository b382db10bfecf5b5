//! A run's broker disks written out as Kafka log directories (`run`/`replay --logs DIR`), so
//! that `mirrorsim dump-log` (or Kafka's own kafka-dump-log) reads what the simulated brokers
//! stored.
//!
//! Contract:
//! - [`BrokerDisks`] holds every broker's storage as the run left it: each file's whole content
//!   as the broker process saw it at the end (flushed or not; a crash earlier in the run
//!   already cut what it lost).
//! - [`BrokerDisks::write_to`] writes `DIR/<cluster>/broker-<id>/<partition dir>/<file>`
//!   (partition directories as Kafka names them, `<topic>-<partition>`; segments
//!   `<20-digit base offset>.log`; the model's own checkpoint files beside them) and returns how
//!   many files it wrote. It runs after the simulation, so it cannot change a run.

use std::fs;
use std::io;
use std::path::Path;

use mirrorsim::broker::{BrokerStorage, MemoryStorage};
use mirrorsim::common::NodeId;
use mirrorsim::log::LogDisk;

/// Every broker's storage at the end of a run, in node order.
#[derive(Debug, Default, Clone)]
pub struct BrokerDisks {
    pub(super) brokers: Vec<(NodeId, MemoryStorage)>,
}

impl BrokerDisks {
    /// Writes every broker's directories under `dir`; `cluster_name(index)` names a cluster's
    /// directory. Returns the number of files written.
    pub fn write_to(&self, dir: &Path, cluster_name: impl Fn(u8) -> String) -> io::Result<usize> {
        let mut written = 0;
        for (node, storage) in &self.brokers {
            let NodeId::Broker(cluster, broker) = node else {
                continue;
            };
            let broker_dir = dir
                .join(cluster_name(cluster.0))
                .join(format!("broker-{}", broker.0));
            for partition_dir in storage.partition_dirs() {
                let Some(disk) = storage.snapshot_dir(&partition_dir) else {
                    continue;
                };
                let target = broker_dir.join(&partition_dir);
                fs::create_dir_all(&target)?;
                for name in disk.list_files() {
                    let data = disk
                        .read_file(&name)
                        .map_err(|error| io::Error::other(error.to_string()))?;
                    fs::write(target.join(&name), &data)?;
                    written += 1;
                }
            }
        }
        Ok(written)
    }
}
