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
//! - Types 3–8 are KIP-848's consumer-group records (`ConsumerGroupMetadata`,
//!   `…PartitionMetadata`, `…MemberMetadata` with its tagged `classicMemberMetadata`,
//!   `…TargetAssignmentMetadata`, `…TargetAssignmentMember`, `…CurrentMemberAssignment`; keys of
//!   the type's own version, values flexible v0, so a later version's new tagged fields are
//!   skipped). Share-group types (9 and up, whose numbering moved between releases) and any
//!   other print `Unknown record type T at offset O, skipping.` A record that does not decode
//!   prints `Error at offset O, skipping. REASON`; a record without a key, which stops
//!   kafka-dump-log with an exception, prints the same error line and the dump goes on, unless
//!   it is one of this model's group records (no key, the value a `GroupRecord` as JSON), which
//!   prints as `{"type":"OffsetCommit"}` and its body as stored.

use mirrorsim::coordinator::group::GroupRecord;

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

// KIP-848's consumer groups (the `consumer` group protocol, Kafka 3.7+): record types 3-8, keys
// of the type's own version, values v0 and flexible (later fields are tagged, so a newer record
// reads with these schemas, its new tags skipped).

const GROUP_ID: &[Field] = &[Field::new("groupId", Type::String, from(0))];
const GROUP_AND_MEMBER_ID: &[Field] = &[
    Field::new("groupId", Type::String, from(0)),
    Field::new("memberId", Type::String, from(0)),
];

/// A key of `record_type` that is the group id and, for member records, the member id.
const fn group_key(name: &'static str, record_type: i16, member: bool) -> Message {
    Message {
        name,
        valid: Versions(record_type, record_type),
        flexible: NONE,
        fields: if member {
            GROUP_AND_MEMBER_ID
        } else {
            GROUP_ID
        },
    }
}

/// A v0 flexible value.
const fn group_value(name: &'static str, fields: &'static [Field]) -> Message {
    Message {
        name,
        valid: Versions(0, 0),
        flexible: from(0),
        fields,
    }
}

const CONSUMER_GROUP_METADATA_KEY: Message = group_key("ConsumerGroupMetadataKey", 3, false);
const CONSUMER_GROUP_METADATA_VALUE: Message = group_value(
    "ConsumerGroupMetadataValue",
    &[Field::new("epoch", Type::Int32, from(0))],
);

const PARTITION_METADATA: &[Field] = &[
    Field::new("partition", Type::Int32, from(0)),
    Field::new("racks", Type::Array(&Type::String), from(0)),
];
const TOPIC_METADATA: &[Field] = &[
    Field::new("topicId", Type::Uuid, from(0)),
    Field::new("topicName", Type::String, from(0)),
    Field::new("numPartitions", Type::Int32, from(0)),
    Field::new(
        "partitionMetadata",
        Type::Array(&Type::Struct(PARTITION_METADATA)),
        from(0),
    ),
];
const CONSUMER_GROUP_PARTITION_METADATA_KEY: Message =
    group_key("ConsumerGroupPartitionMetadataKey", 4, false);
const CONSUMER_GROUP_PARTITION_METADATA_VALUE: Message = group_value(
    "ConsumerGroupPartitionMetadataValue",
    &[Field::new(
        "topics",
        Type::Array(&Type::Struct(TOPIC_METADATA)),
        from(0),
    )],
);

const CLASSIC_PROTOCOL: &[Field] = &[
    Field::new("name", Type::String, from(0)),
    Field::new("metadata", Type::Bytes, from(0)),
];
const CLASSIC_MEMBER_METADATA: &[Field] = &[
    Field::new("sessionTimeoutMs", Type::Int32, from(0)),
    Field::new(
        "supportedProtocols",
        Type::Array(&Type::Struct(CLASSIC_PROTOCOL)),
        from(0),
    ),
];
const CONSUMER_GROUP_MEMBER_METADATA_KEY: Message =
    group_key("ConsumerGroupMemberMetadataKey", 5, true);
const CONSUMER_GROUP_MEMBER_METADATA_VALUE: Message = group_value(
    "ConsumerGroupMemberMetadataValue",
    &[
        Field::new("instanceId", Type::String, from(0)).nullable(from(0)),
        Field::new("rackId", Type::String, from(0)).nullable(from(0)),
        Field::new("clientId", Type::String, from(0)),
        Field::new("clientHost", Type::String, from(0)),
        Field::new("subscribedTopicNames", Type::Array(&Type::String), from(0)),
        Field::new("subscribedTopicRegex", Type::String, from(0)).nullable(from(0)),
        Field::new("rebalanceTimeoutMs", Type::Int32, from(0)),
        Field::new("serverAssignor", Type::String, from(0)).nullable(from(0)),
        // A member that joined with the classic protocol (KIP-848's upgrade path), tag 0.
        Field::new(
            "classicMemberMetadata",
            Type::Struct(CLASSIC_MEMBER_METADATA),
            from(0),
        )
        .nullable(from(0))
        .tagged(0, 0),
    ],
);

const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: Message =
    group_key("ConsumerGroupTargetAssignmentMetadataKey", 6, false);
const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE: Message = group_value(
    "ConsumerGroupTargetAssignmentMetadataValue",
    &[Field::new("assignmentEpoch", Type::Int32, from(0))],
);

const TOPIC_ID_PARTITIONS: &[Field] = &[
    Field::new("topicId", Type::Uuid, from(0)),
    Field::new("partitions", Type::Array(&Type::Int32), from(0)),
];
const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: Message =
    group_key("ConsumerGroupTargetAssignmentMemberKey", 7, true);
const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE: Message = group_value(
    "ConsumerGroupTargetAssignmentMemberValue",
    &[Field::new(
        "topicPartitions",
        Type::Array(&Type::Struct(TOPIC_ID_PARTITIONS)),
        from(0),
    )],
);

const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: Message =
    group_key("ConsumerGroupCurrentMemberAssignmentKey", 8, true);
const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE: Message = group_value(
    "ConsumerGroupCurrentMemberAssignmentValue",
    &[
        Field::new("memberEpoch", Type::Int32, from(0)),
        Field::new("previousMemberEpoch", Type::Int32, from(0)),
        Field::new("state", Type::Int8, from(0)),
        Field::new(
            "assignedPartitions",
            Type::Array(&Type::Struct(TOPIC_ID_PARTITIONS)),
            from(0),
        ),
        Field::new(
            "partitionsPendingRevocation",
            Type::Array(&Type::Struct(TOPIC_ID_PARTITIONS)),
            from(0),
        ),
    ],
);

/// The key and value schemas of a record type (Kafka's `GroupCoordinatorRecordSerde`).
fn schemas_of(record_type: i16) -> Option<(&'static Message, &'static Message)> {
    match record_type {
        0 | 1 => Some((&OFFSET_COMMIT_KEY, &OFFSET_COMMIT_VALUE)),
        2 => Some((&GROUP_METADATA_KEY, &GROUP_METADATA_VALUE)),
        3 => Some((&CONSUMER_GROUP_METADATA_KEY, &CONSUMER_GROUP_METADATA_VALUE)),
        4 => Some((
            &CONSUMER_GROUP_PARTITION_METADATA_KEY,
            &CONSUMER_GROUP_PARTITION_METADATA_VALUE,
        )),
        5 => Some((
            &CONSUMER_GROUP_MEMBER_METADATA_KEY,
            &CONSUMER_GROUP_MEMBER_METADATA_VALUE,
        )),
        6 => Some((
            &CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
            &CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        )),
        7 => Some((
            &CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
            &CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        )),
        8 => Some((
            &CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
            &CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        )),
        _ => None,
    }
}

/// Decodes one `__consumer_offsets` record.
pub(super) fn decode(offset: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Decoded {
    let Some(key) = key else {
        if let Some(model) = super::model_record::<GroupRecord>(value) {
            return model;
        }
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

/// Why a record did not decode, in the two kinds Kafka's parser tells apart.
enum RecordProblem {
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
            decoded.printed().0.as_deref(),
            Some(r#"{"type":"1","data":{"group":"g","topic":"orders","partition":3}}"#)
        );
        assert_eq!(
            decoded.printed().1.as_deref(),
            Some(
                r#"{"version":"3","data":{"offset":42,"leaderEpoch":7,"metadata":"","commitTimestamp":1700000000000}}"#
            )
        );
        let tombstone = decode(5, Some(&key), None);
        assert_eq!(tombstone.printed().1.as_deref(), Some("<DELETE>"));
    }

    #[test]
    fn a_kip_848_member_that_joined_with_the_classic_protocol_shows_its_tagged_metadata() {
        let mut key = 5i16.to_be_bytes().to_vec();
        key.extend(string("cg"));
        key.extend(string("m-1"));
        // ConsumerGroupMemberMetadataValue v0 (compact strings: length + 1).
        let mut value = 0i16.to_be_bytes().to_vec();
        value.push(0); // instanceId null
        value.extend([2, b'r']); // rackId "r"
        value.extend([3, b'c', b'1']); // clientId
        value.extend([2, b'h']); // clientHost
        value.extend([2, 2, b'o']); // subscribedTopicNames ["o"]
        value.push(0); // subscribedTopicRegex null
        value.extend(30_000i32.to_be_bytes()); // rebalanceTimeoutMs
        value.push(0); // serverAssignor null
                       // Tagged section: one field, tag 0 (classicMemberMetadata), 16 bytes: present (varint 1).
        value.extend([1, 0, 16, 1]);
        value.extend(45_000i32.to_be_bytes()); // sessionTimeoutMs
        value.extend([2, 6, b'r', b'a', b'n', b'g', b'e', 2, 7, 0]); // [{range, 0x07}] + tags
        value.push(0); // the struct's own tagged section
        let decoded = decode(3, Some(&key), Some(&value));
        assert_eq!(
            decoded.printed().0.as_deref(),
            Some(r#"{"type":"5","data":{"groupId":"cg","memberId":"m-1"}}"#)
        );
        assert_eq!(
            decoded.printed().1.as_deref(),
            Some(
                r#"{"version":"0","data":{"instanceId":null,"rackId":"r","clientId":"c1","clientHost":"h","subscribedTopicNames":["o"],"subscribedTopicRegex":null,"rebalanceTimeoutMs":30000,"serverAssignor":null,"classicMemberMetadata":{"sessionTimeoutMs":45000,"supportedProtocols":[{"name":"range","metadata":"Bw=="}]}}}"#
            )
        );
    }

    #[test]
    fn unknown_types_missing_keys_and_damage_are_lines_not_failures() {
        let decoded = decode(9, Some(&[0, 99, 0, 0]), Some(&[0, 0]));
        assert_eq!(
            decoded.printed().0.as_deref(),
            Some("Unknown record type 99 at offset 9, skipping.")
        );
        assert_eq!(decoded.payload, None);
        let decoded = decode(9, None, Some(&[0, 0]));
        assert!(decoded
            .printed()
            .0
            .unwrap()
            .contains("message had a missing key"));
        let decoded = decode(9, Some(&[0]), None);
        assert_eq!(
            decoded.printed().0.as_deref(),
            Some("Error at offset 9, skipping. Could not read version from key's buffer.")
        );
        let key = offset_commit_key(0, "g", "t", 0);
        let decoded = decode(9, Some(&key), Some(&[0, 9, 0]));
        assert_eq!(
            decoded.printed().0.as_deref(),
            Some(
                "Error at offset 9, skipping. Could not read record with version 9 from value's \
                 buffer due to: Can't read version 9 of OffsetCommitValue."
            )
        );
    }
}
