//! `--offsets-decoder`: the records of `__consumer_offsets`, printed as kafka-dump-log's
//! `OffsetsMessageParser` prints them.
//!
//! Contract:
//! - A record's key starts with an int16 record type: 0 and 1 are `OffsetCommitKey` (of that
//!   version), 2 is `GroupMetadataKey`; its value starts with an int16 version of the matching
//!   value schema (`OffsetCommitValue` v0–4 with 4.1's tagged `topicId`, `GroupMetadataValue`
//!   v0–4). These are the classic group protocol's records, the ones every cluster writes; the
//!   schemas are transcribed from Kafka's `group-coordinator` message definitions.
//! - The key prints as `{"type":"T","data":{…}}`, the value as `{"version":"V","data":{…}}` or
//!   `<DELETE>` for a tombstone. In a `GroupMetadataValue` whose protocol type is `consumer`,
//!   each member's `subscription` and `assignment` bytes are replaced by their decoded
//!   `ConsumerProtocolSubscription`/`ConsumerProtocolAssignment` (v0–3) as Kafka does; bytes
//!   that do not decode stay base64.
//! - Record types Kafka has beyond the classic three (3–8 for KIP-848 consumer groups, later
//!   ones for share groups) print `Unknown record type T at offset O, skipping.` (Kafka decodes
//!   them; their schemas are not transcribed here: the README says so). A record that does not
//!   decode prints `Error at offset O, skipping. REASON`; a record without a key, which stops
//!   kafka-dump-log with an exception, prints the same error line and the dump goes on.

use super::schema::{self, from, Field, Json, Message, Type, Versions, NONE};
use super::Decoded;

const OFFSET_COMMIT_KEY: Message = Message {
    name: "OffsetCommitKey",
    valid: Versions(0, 1),
    flexible: NONE,
    fields: &[
        Field::new("group", Type::String, Versions(0, 1)),
        Field::new("topic", Type::String, Versions(0, 1)),
        Field::new("partition", Type::Int32, Versions(0, 1)),
    ],
};

const GROUP_METADATA_KEY: Message = Message {
    name: "GroupMetadataKey",
    valid: Versions(2, 2),
    flexible: NONE,
    fields: &[Field::new("group", Type::String, Versions(2, 2))],
};

const OFFSET_COMMIT_VALUE: Message = Message {
    name: "OffsetCommitValue",
    valid: Versions(0, 4),
    flexible: from(4),
    fields: &[
        Field::new("offset", Type::Int64, from(0)),
        Field::new("leaderEpoch", Type::Int32, from(3)),
        Field::new("metadata", Type::String, from(0)),
        Field::new("commitTimestamp", Type::Int64, from(0)),
        Field::new("expireTimestamp", Type::Int64, Versions(1, 1)),
        // KAFKA-19141 (Kafka 4.1): the committed topic's id, tag 0 of v4.
        Field::new("topicId", Type::Uuid, from(4)).tagged(0, 0),
    ],
};

const MEMBER_METADATA: &[Field] = &[
    Field::new("memberId", Type::String, from(0)),
    Field::new("groupInstanceId", Type::String, from(3)).nullable(from(3)),
    Field::new("clientId", Type::String, from(0)),
    Field::new("clientHost", Type::String, from(0)),
    Field::new("rebalanceTimeout", Type::Int32, from(1)),
    Field::new("sessionTimeout", Type::Int32, from(0)),
    Field::new("subscription", Type::Bytes, from(0)),
    Field::new("assignment", Type::Bytes, from(0)),
];

const GROUP_METADATA_VALUE: Message = Message {
    name: "GroupMetadataValue",
    valid: Versions(0, 4),
    flexible: from(4),
    fields: &[
        Field::new("protocolType", Type::String, from(0)),
        Field::new("generation", Type::Int32, from(0)),
        Field::new("protocol", Type::String, from(0)).nullable(from(0)),
        Field::new("leader", Type::String, from(0)).nullable(from(0)),
        Field::new("currentStateTimestamp", Type::Int64, from(2)),
        Field::new(
            "members",
            Type::Array(&Type::Struct(MEMBER_METADATA)),
            from(0),
        ),
    ],
};

/// `TopicPartition` of the consumer protocol (`OwnedPartitions`, `AssignedPartitions`).
const TOPIC_PARTITIONS: &[Field] = &[
    Field::new("topic", Type::String, from(0)),
    Field::new("partitions", Type::Array(&Type::Int32), from(0)),
];

const SUBSCRIPTION: Message = Message {
    name: "ConsumerProtocolSubscription",
    valid: Versions(0, 3),
    flexible: NONE,
    fields: &[
        Field::new("topics", Type::Array(&Type::String), from(0)),
        Field::new("userData", Type::Bytes, from(0)).nullable(from(0)),
        Field::new(
            "ownedPartitions",
            Type::Array(&Type::Struct(TOPIC_PARTITIONS)),
            from(1),
        ),
        Field::new("generationId", Type::Int32, from(2)),
        Field::new("rackId", Type::String, from(3)).nullable(from(3)),
    ],
};

const ASSIGNMENT: Message = Message {
    name: "ConsumerProtocolAssignment",
    valid: Versions(0, 3),
    flexible: NONE,
    fields: &[
        Field::new(
            "assignedPartitions",
            Type::Array(&Type::Struct(TOPIC_PARTITIONS)),
            from(0),
        ),
        Field::new("userData", Type::Bytes, from(0)).nullable(from(0)),
    ],
};

/// The key and value schemas of a record type.
fn schemas_of(record_type: i16) -> Option<(&'static Message, &'static Message)> {
    match record_type {
        0 | 1 => Some((&OFFSET_COMMIT_KEY, &OFFSET_COMMIT_VALUE)),
        2 => Some((&GROUP_METADATA_KEY, &GROUP_METADATA_VALUE)),
        _ => None,
    }
}

/// Decodes one `__consumer_offsets` record.
pub(super) fn decode(offset: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Decoded {
    let Some(key) = key else {
        return Decoded::key_only(format!(
            "Failed to decode message at offset {offset} using offset topic decoder (message \
             had a missing key)"
        ));
    };
    match decode_record(key, value) {
        Ok((key, value)) => Decoded::json(key, value),
        Err(RecordProblem::UnknownType(record_type)) => Decoded::key_only(format!(
            "Unknown record type {record_type} at offset {offset}, skipping."
        )),
        Err(RecordProblem::Bad(reason)) => {
            Decoded::key_only(format!("Error at offset {offset}, skipping. {reason}"))
        }
    }
}

pub(super) enum RecordProblem {
    UnknownType(i16),
    Bad(String),
}

/// The key's and value's JSON (the value `None` for a tombstone), in the words Kafka's
/// `CoordinatorRecordSerde` uses for what it cannot read.
fn decode_record(key: &[u8], value: Option<&[u8]>) -> Result<(Json, Option<Json>), RecordProblem> {
    let (record_type, key_body) = schema::split_version(key).ok_or_else(|| {
        RecordProblem::Bad("Could not read version from key's buffer.".to_string())
    })?;
    let (key_schema, value_schema) =
        schemas_of(record_type).ok_or(RecordProblem::UnknownType(record_type))?;
    let key_data = schema::read(key_schema, record_type, key_body)
        .map_err(|error| unreadable(record_type, "key", &error))?;
    let key_json = versioned("type", record_type, key_data);
    let Some(value) = value else {
        return Ok((key_json, None));
    };
    let (version, value_body) = schema::split_version(value).ok_or_else(|| {
        RecordProblem::Bad("Could not read version from value's buffer.".to_string())
    })?;
    let mut value_data = schema::read(value_schema, version, value_body)
        .map_err(|error| unreadable(version, "value", &error))?;
    if record_type == 2 {
        decode_consumer_protocol(&mut value_data);
    }
    Ok((key_json, Some(versioned("version", version, value_data))))
}

fn unreadable(version: i16, part: &str, error: &schema::SchemaError) -> RecordProblem {
    RecordProblem::Bad(format!(
        "Could not read record with version {version} from {part}'s buffer due to: {error}."
    ))
}

/// `{"type":"1","data":{…}}`: Kafka writes the version as a string.
fn versioned(label: &'static str, version: i16, data: Json) -> Json {
    Json::Object(vec![
        (label, Json::Text(version.to_string())),
        ("data", data),
    ])
}

/// For a group of the `consumer` protocol type, each member's subscription and assignment
/// (each an int16 version and the message) replaced by their JSON; left as bytes when they do
/// not decode, as Kafka swallows the error and keeps them.
fn decode_consumer_protocol(group: &mut Json) {
    if group.get("protocolType") != Some(&Json::Text("consumer".to_string())) {
        return;
    }
    let Some(Json::Array(members)) = group.get_mut("members") else {
        return;
    };
    for member in members {
        replace_embedded(member, "subscription", &SUBSCRIPTION);
        replace_embedded(member, "assignment", &ASSIGNMENT);
    }
}

fn replace_embedded(member: &mut Json, field: &str, message: &Message) {
    let Some(slot) = member.get_mut(field) else {
        return;
    };
    let Json::Bytes(bytes) = slot else {
        return;
    };
    let decoded = schema::split_version(bytes)
        .and_then(|(version, body)| schema::read(message, version, body).ok());
    if let Some(decoded) = decoded {
        *slot = decoded;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &str) -> Vec<u8> {
        let mut bytes = (text.len() as i16).to_be_bytes().to_vec();
        bytes.extend_from_slice(text.as_bytes());
        bytes
    }

    fn offset_commit_key(version: i16, group: &str, topic: &str, partition: i32) -> Vec<u8> {
        let mut key = version.to_be_bytes().to_vec();
        key.extend(string(group));
        key.extend(string(topic));
        key.extend(partition.to_be_bytes());
        key
    }

    #[test]
    fn an_offset_commit_prints_as_kafkas_offsets_parser_prints_it() {
        let key = offset_commit_key(1, "g", "orders", 3);
        // OffsetCommitValue v3: offset, leaderEpoch, metadata, commitTimestamp.
        let mut value = 3i16.to_be_bytes().to_vec();
        value.extend(42i64.to_be_bytes());
        value.extend(7i32.to_be_bytes());
        value.extend(string(""));
        value.extend(1_700_000_000_000i64.to_be_bytes());
        let decoded = decode(5, Some(&key), Some(&value));
        assert_eq!(
            decoded.key.as_deref(),
            Some(r#"{"type":"1","data":{"group":"g","topic":"orders","partition":3}}"#)
        );
        assert_eq!(
            decoded.payload.as_deref(),
            Some(
                r#"{"version":"3","data":{"offset":42,"leaderEpoch":7,"metadata":"","commitTimestamp":1700000000000}}"#
            )
        );
        let tombstone = decode(5, Some(&key), None);
        assert_eq!(tombstone.payload.as_deref(), Some("<DELETE>"));
    }

    #[test]
    fn unknown_types_missing_keys_and_damage_are_lines_not_failures() {
        let decoded = decode(9, Some(&[0, 3, 0, 0]), Some(&[0, 0]));
        assert_eq!(
            decoded.key.as_deref(),
            Some("Unknown record type 3 at offset 9, skipping.")
        );
        assert_eq!(decoded.payload, None);
        let decoded = decode(9, None, Some(&[0, 0]));
        assert!(decoded.key.unwrap().contains("message had a missing key"));
        let decoded = decode(9, Some(&[0]), None);
        assert_eq!(
            decoded.key.as_deref(),
            Some("Error at offset 9, skipping. Could not read version from key's buffer.")
        );
        let key = offset_commit_key(0, "g", "t", 0);
        let decoded = decode(9, Some(&key), Some(&[0, 9, 0]));
        assert_eq!(
            decoded.key.as_deref(),
            Some(
                "Error at offset 9, skipping. Could not read record with version 9 from value's \
                 buffer due to: Can't read version 9 of OffsetCommitValue."
            )
        );
    }
}
