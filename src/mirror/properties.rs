//! A mirror's properties (the CLUSTER_MIRROR config resource): which keys a mirror may carry,
//! the source cluster id recorded when it is created, and which changes reset the connection
//! to the source.
//!
//! Contract:
//! - [`validate`] judges a mirror's whole property set, as CreateMirror gives it or as an
//!   IncrementalAlterConfigs would leave it: every key must be one a mirror knows (spec §8's
//!   mirror-level table, and the client settings a source connection passes through:
//!   `security.protocol`, `sasl.*`, `ssl.*`, socket and request timeouts); `bootstrap.servers`
//!   must name brokers of one cluster; the sync's filters and the failure settings must
//!   parse. The prototype refuses an unknown key (`invalid.config=foo` in its
//!   `test_config_update`) rather than keep a property nothing reads.
//! - [`SOURCE_CLUSTER_ID_CONFIG`] is internal: the controller records the source cluster's id
//!   when it creates the mirror (resolved once, from the cluster `bootstrap.servers` names then:
//!   here a broker's name carries its cluster, which is what a DescribeCluster answer from it
//!   would report), and no user request may set or change it. A broker that finds the mirror's
//!   `bootstrap.servers` naming another cluster fails its partitions for good (spec S-15).
//! - [`resets_source_connection`]: a changed `bootstrap.servers` drops the brokers' view of the
//!   source and re-creates their fetchers (spec §3.1, "connection config changed"). The
//!   prototype resets on any key but the filters; the other keys the model reads (failure
//!   settings) are read afresh at each use, so no other change has a connection to reset.

use std::collections::BTreeMap;

use super::failure::{
    FailureSettings, RETRY_INITIAL_BACKOFF_CONFIG, RETRY_MAX_ATTEMPTS_CONFIG,
    RETRY_MAX_BACKOFF_CONFIG, SOCKET_TIMEOUT_CONFIG,
};
use super::parse_bootstrap_servers;
use super::sync::{
    SyncSettings, ACL_INCLUDE_CONFIG, BOOTSTRAP_SERVERS_CONFIG, GROUPS_EXCLUDE_CONFIG,
    GROUPS_INCLUDE_CONFIG, TOPICS_EXCLUDE_CONFIG, TOPICS_INCLUDE_CONFIG,
    TOPIC_PROPERTIES_EXCLUDE_CONFIG,
};
use crate::protocol::ClusterIndex;

/// The source cluster id recorded at creation (the prototype's `SOURCE_CLUSTER_ID_CONFIG`,
/// whose literal key the spec did not retrieve). Internal: set by the controller only.
pub const SOURCE_CLUSTER_ID_CONFIG: &str = "mirror.source.cluster.id";

/// Mirror-level keys of spec §8 that the model keeps without reading (fetch sizing, buffers,
/// connection timeouts): accepted so that a mirror configured as in Kafka is not refused.
const PASSED_THROUGH: &[&str] = &[
    "request.timeout.ms",
    "socket.connection.setup.timeout.ms",
    "socket.connection.setup.timeout.max.ms",
    "connections.max.idle.ms",
    "mirror.fetch.wait.max.ms",
    "mirror.fetch.backoff.ms",
    "mirror.fetch.min.bytes",
    "mirror.fetch.response.max.bytes",
    "mirror.fetch.max.bytes",
    "mirror.socket.receive.buffer.bytes",
    "security.protocol",
];

/// Prefixes of the client security settings a source connection passes through.
const PASSED_THROUGH_PREFIXES: &[&str] = &["sasl.", "ssl."];

/// The keys a mirror's properties may hold, besides the passed-through ones.
const READ: &[&str] = &[
    BOOTSTRAP_SERVERS_CONFIG,
    TOPICS_INCLUDE_CONFIG,
    TOPICS_EXCLUDE_CONFIG,
    GROUPS_INCLUDE_CONFIG,
    GROUPS_EXCLUDE_CONFIG,
    TOPIC_PROPERTIES_EXCLUDE_CONFIG,
    ACL_INCLUDE_CONFIG,
    RETRY_INITIAL_BACKOFF_CONFIG,
    RETRY_MAX_BACKOFF_CONFIG,
    RETRY_MAX_ATTEMPTS_CONFIG,
    SOCKET_TIMEOUT_CONFIG,
    SOURCE_CLUSTER_ID_CONFIG,
];

/// Whether `key` is a property a mirror may carry.
pub fn is_known_key(key: &str) -> bool {
    READ.contains(&key)
        || PASSED_THROUGH.contains(&key)
        || PASSED_THROUGH_PREFIXES
            .iter()
            .any(|prefix| key.len() > prefix.len() && key.starts_with(prefix))
}

/// Why `properties` cannot be a mirror's, if they cannot (see the module doc).
pub fn validate(properties: &BTreeMap<String, String>) -> Result<(), String> {
    if let Some(key) = properties.keys().find(|key| !is_known_key(key)) {
        return Err(format!("{key:?} is not a mirror property"));
    }
    let bootstrap = properties
        .get(BOOTSTRAP_SERVERS_CONFIG)
        .ok_or_else(|| format!("{BOOTSTRAP_SERVERS_CONFIG} is required"))?;
    parse_bootstrap_servers(bootstrap)
        .map_err(|problem| format!("{BOOTSTRAP_SERVERS_CONFIG}: {problem}"))?;
    let get = |key: &str| properties.get(key).map(String::as_str);
    SyncSettings::from_properties(get)?;
    FailureSettings::from_properties(get)?;
    Ok(())
}

/// The id of the cluster `bootstrap.servers` names, as a broker of it reports it.
pub fn cluster_id_of_bootstrap(bootstrap: &str) -> Option<String> {
    let nodes = parse_bootstrap_servers(bootstrap).ok()?;
    nodes.first().map(|node| node.cluster().cluster_id())
}

/// The client setting that holds a source connection's SASL credentials
/// (`… required username="m1" password="…";`).
pub const SASL_JAAS_CONFIG: &str = "sasl.jaas.config";

/// The principal `mirror`'s connections to its source authenticate as, by its properties in
/// `image` (see [`source_principal`]).
pub fn mirror_principal(image: &crate::metadata::MetadataImage, mirror: &str) -> String {
    let resource = crate::metadata::ConfigResource::Mirror(mirror.to_owned());
    source_principal(image.configs.get(&resource))
}

/// The principal a request of `mirror` from a broker of cluster `own` to `to` carries: the
/// mirror's when `to` is of another cluster (its source: the source sees the mirror's
/// credentials on every request of its connection), none otherwise.
pub fn request_principal(
    image: &crate::metadata::MetadataImage,
    (own, mirror): (ClusterIndex, Option<&str>),
    to: crate::protocol::NodeId,
) -> Option<String> {
    mirror
        .filter(|_| to.cluster() != own)
        .map(|mirror| mirror_principal(image, mirror))
}

/// The principal a KIP-1279 mirror's connections to its source authenticate as, given its
/// properties: `User:<username>` of its `sasl.jaas.config`, else `User:ANONYMOUS` (Kafka's
/// principal of a PLAINTEXT connection). Read afresh for every request, so a changed setting
/// takes effect at the next one.
pub fn source_principal(properties: Option<&BTreeMap<String, String>>) -> String {
    let username = properties
        .and_then(|properties| properties.get(SASL_JAAS_CONFIG))
        .and_then(|jaas| {
            let (_, rest) = jaas.split_once("username=\"")?;
            rest.split_once('"').map(|(username, _)| username)
        });
    format!("User:{}", username.unwrap_or("ANONYMOUS"))
}

/// Whether a change of `key` resets the brokers' connection to the source.
pub fn resets_source_connection(key: &str) -> bool {
    key == BOOTSTRAP_SERVERS_CONFIG
}

/// The recorded source cluster id, and the cluster `bootstrap.servers` names now, when they
/// differ (spec S-15: the source was replaced, or `bootstrap.servers` was pointed elsewhere).
pub fn source_cluster_changed(
    properties: &BTreeMap<String, String>,
) -> Option<(String, ClusterIndex)> {
    let recorded = properties.get(SOURCE_CLUSTER_ID_CONFIG)?;
    let named = parse_bootstrap_servers(properties.get(BOOTSTRAP_SERVERS_CONFIG)?).ok()?;
    let cluster = named.first()?.cluster();
    (cluster.cluster_id() != *recorded).then(|| (recorded.clone(), cluster))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn properties(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn a_mirror_authenticates_as_the_username_of_its_sasl_settings() {
        let jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                    username=\"m1\" password=\"secret\";";
        let with = properties(&[(SASL_JAAS_CONFIG, jaas)]);
        assert_eq!(source_principal(Some(&with)), "User:m1");
        assert_eq!(source_principal(Some(&properties(&[]))), "User:ANONYMOUS");
        assert_eq!(source_principal(None), "User:ANONYMOUS");
        let unreadable = properties(&[(SASL_JAAS_CONFIG, "username=m1")]);
        assert_eq!(source_principal(Some(&unreadable)), "User:ANONYMOUS");
    }

    #[test]
    fn a_mirror_needs_a_usable_bootstrap_and_known_keys() {
        let bootstrap = (BOOTSTRAP_SERVERS_CONFIG, "a-broker-1,a-broker-2");
        assert_eq!(validate(&properties(&[bootstrap])), Ok(()));
        let passed = [
            bootstrap,
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "PLAIN"),
            ("mirror.fetch.wait.max.ms", "100"),
            (TOPICS_INCLUDE_CONFIG, "orders"),
        ];
        assert_eq!(validate(&properties(&passed)), Ok(()));
        for bad in [
            vec![],
            vec![(BOOTSTRAP_SERVERS_CONFIG, "a")],
            vec![(BOOTSTRAP_SERVERS_CONFIG, "a-broker-1,b-broker-1")],
            vec![bootstrap, ("invalid.config", "foo")],
            vec![bootstrap, ("sasl.", "x")],
            vec![bootstrap, (RETRY_MAX_ATTEMPTS_CONFIG, "-1")],
            vec![bootstrap, (TOPICS_INCLUDE_CONFIG, "(")],
        ] {
            assert!(validate(&properties(&bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_recorded_source_cluster_is_compared_with_the_one_bootstrap_names() {
        let recorded = (SOURCE_CLUSTER_ID_CONFIG, "cluster-a");
        let same = properties(&[recorded, (BOOTSTRAP_SERVERS_CONFIG, "a-broker-2")]);
        assert_eq!(source_cluster_changed(&same), None);
        let moved = properties(&[recorded, (BOOTSTRAP_SERVERS_CONFIG, "c-broker-1")]);
        assert_eq!(
            source_cluster_changed(&moved),
            Some(("cluster-a".to_owned(), ClusterIndex(2)))
        );
        // A mirror created before the id was recorded is not judged.
        let unrecorded = properties(&[(BOOTSTRAP_SERVERS_CONFIG, "c-broker-1")]);
        assert_eq!(source_cluster_changed(&unrecorded), None);
        assert_eq!(
            cluster_id_of_bootstrap("b-broker-3").as_deref(),
            Some("cluster-b")
        );
        assert!(resets_source_connection(BOOTSTRAP_SERVERS_CONFIG));
        assert!(!resets_source_connection(TOPICS_INCLUDE_CONFIG));
    }
}
