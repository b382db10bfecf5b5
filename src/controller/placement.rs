//! Deterministic choices the controller makes when it creates a topic: the topic id, the replica
//! assignment, and the validation of names and configs.

use crate::metadata::{MIN_INSYNC_REPLICAS, UNCLEAN_LEADER_ELECTION_ENABLE};
use crate::protocol::{BrokerId, ClusterIndex, TopicId};

/// Longest legal topic name (Kafka's `Topic.MAX_NAME_LENGTH`).
pub const TOPIC_NAME_LENGTH_MAX: usize = 249;

/// Whether `name` is a legal Kafka topic name: 1..=249 characters from `[a-zA-Z0-9._-]`, and
/// neither `.` nor `..`.
pub fn is_valid_topic_name(name: &str) -> bool {
    topic_name_problem(name).is_none()
}

/// Why `name` is not a legal Kafka topic name (Kafka's `Topic.validate`), `None` if it is.
pub fn topic_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the empty string is not allowed".to_owned());
    }
    if name == "." || name == ".." {
        return Some(format!("'{name}' is not allowed"));
    }
    if name.len() > TOPIC_NAME_LENGTH_MAX {
        return Some(format!(
            "{} characters, longer than the maximum of {TOPIC_NAME_LENGTH_MAX}",
            name.chars().count()
        ));
    }
    if !name
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
    {
        return Some(format!(
            "{name:?} contains characters other than ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    None
}

/// The name two topics collide on when they differ only in `.` versus `_` (Kafka's
/// `Topic.unifyCollisionChars`: both map to `_` in metric names, so Kafka refuses the second
/// with `InvalidTopic`).
pub fn topic_collision_key(name: &str) -> String {
    name.replace('.', "_")
}

/// Checks the topic configs of a create request: no key twice, and the values of the configs
/// the model interprets are legal. Other keys (e.g. KIP-1279's `mirror.name`) pass unchanged.
pub fn validate_topic_configs(configs: &[(String, String)]) -> Result<(), String> {
    for (index, (name, value)) in configs.iter().enumerate() {
        if configs[..index].iter().any(|(earlier, _)| earlier == name) {
            return Err(format!("config {name} given twice"));
        }
        let legal = match name.as_str() {
            UNCLEAN_LEADER_ELECTION_ENABLE => value == "true" || value == "false",
            MIN_INSYNC_REPLICAS => value.parse::<i32>().is_ok_and(|count| count >= 1),
            _ => true,
        };
        if !legal {
            return Err(format!("illegal value {value:?} for config {name}"));
        }
    }
    Ok(())
}

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv1a(seed: u64, parts: &[&[u8]]) -> u64 {
    let mut hash = seed;
    for part in parts {
        // Length-prefix every part so that ("ab", "c") and ("a", "bc") differ.
        for byte in (part.len() as u64).to_be_bytes().iter().chain(part.iter()) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(FNV_PRIME);
        }
    }
    hash
}

/// SplitMix64's finalizer: spreads FNV's weak low bits over the whole word.
fn mix(mut value: u64) -> u64 {
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

/// The id of a topic created by this controller: a hash of the cluster id, the topic name, the
/// offset of its `Topic` record and an attempt counter (raised only to step over an id that is
/// taken or reserved). Stable across platforms and Rust versions; no randomness.
pub fn derive_topic_id(cluster: ClusterIndex, name: &str, offset: i64, attempt: u32) -> TopicId {
    let cluster_id = cluster.cluster_id();
    let parts: [&[u8]; 4] = [
        cluster_id.as_bytes(),
        name.as_bytes(),
        &offset.to_be_bytes(),
        &attempt.to_be_bytes(),
    ];
    let high = mix(fnv1a(0xcbf2_9ce4_8422_2325, &parts));
    let low = mix(fnv1a(0x6c62_272e_07bb_0142, &parts));
    TopicId((u128::from(high) << 64) | u128::from(low))
}

/// Whether Kafka reserves `topic_id` (the zero UUID and the metadata topic's UUID 1).
pub fn is_reserved_topic_id(topic_id: TopicId) -> bool {
    topic_id.0 <= 1
}

/// Replica lists for `partition_count` partitions over `brokers` (sorted, distinct), Kafka's
/// rack-unaware `AdminUtils.assignReplicasToBrokers`: partition `p`'s first replica (its
/// preferred leader) is broker `(p + start) mod n`, and followers follow at a shift that grows
/// every `n` partitions, so leaders and followers spread evenly. Kafka draws `start` and the
/// initial shift at random; here both come from the topic id, so the result is deterministic
/// and different topics still start on different brokers.
pub fn assign_replicas(
    brokers: &[BrokerId],
    partition_count: i32,
    replication_factor: usize,
    topic_id: TopicId,
) -> Vec<Vec<BrokerId>> {
    let broker_count = brokers.len();
    assert!(partition_count > 0, "partition count must be positive");
    assert!(
        replication_factor >= 1,
        "replication factor must be positive"
    );
    assert!(
        replication_factor <= broker_count,
        "replication factor above the broker count"
    );
    assert!(
        brokers.windows(2).all(|pair| pair[0] < pair[1]),
        "brokers must be sorted and distinct"
    );
    let start_index = (topic_id.0 as u64 % broker_count as u64) as usize;
    let mut replica_shift = ((topic_id.0 >> 64) as u64 % broker_count as u64) as usize;
    let mut assignment = Vec::with_capacity(partition_count as usize);
    for partition in 0..partition_count as usize {
        if partition > 0 && partition % broker_count == 0 {
            replica_shift += 1;
        }
        let first_index = (partition + start_index) % broker_count;
        let mut replicas = Vec::with_capacity(replication_factor);
        replicas.push(brokers[first_index]);
        for follower in 0..replication_factor - 1 {
            // `replication_factor <= broker_count`, so `broker_count >= 2` here.
            let shift = 1 + (replica_shift + follower) % (broker_count - 1);
            replicas.push(brokers[(first_index + shift) % broker_count]);
        }
        assert_eq!(replicas.len(), replication_factor);
        assert!(
            replicas
                .iter()
                .enumerate()
                .all(|(index, replica)| !replicas[..index].contains(replica)),
            "assigned replicas are distinct"
        );
        assignment.push(replicas);
    }
    assignment
}
