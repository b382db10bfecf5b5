//! `--mirror-state-decoder`: the records of `__mirror_state` as this model's mirror coordinator
//! writes them, printed in the shape of Kafka's offsets decoder.
//!
//! Contract:
//! - The model's coordinator stores each record as the JSON of
//!   [`mirrorsim::mirror::MirrorStateRecord`] in the record's value, with no key (the model's
//!   coordinator runtime, `encode_records`; KIP-1279's prototype writes binary
//!   `MirrorPartitionStateKey`/`Value` and `LastMirrorEpochsKey`/`Value` records whose type
//!   numbers are not public, so those are not decoded here: the README says so).
//! - A record prints as `key: {"type":"MirrorPartitionState","data":{"mirrorName":…,"topicId":…,"partition":…}}`
//!   (or type `LastMirrorEpochs`) and `payload: {"data":{…}}` with the value's fields in the
//!   KIP's names (`state`, `leaderEpoch`, `stateEpoch`, `previousState`, `retryAttempt`,
//!   `errorMessage`, then the model's own `ownWritesOnly` and `sourceTopicId`; for
//!   `LastMirrorEpochs`, `lastMirrorEpoch` and `lastMirrorOffset`), or `<DELETE>` for a
//!   tombstone. Topic ids print as Kafka prints a `Uuid`; states by their KIP names
//!   (`MIRRORING`, …).
//! - A record whose value is not such a record prints `Error at offset O, skipping. REASON`.

use mirrorsim::common::TopicId;
use mirrorsim::mirror::coordinator::{MirrorStateRecord, PartitionStateValue};
use mirrorsim::protocol::MirrorPartitionId;

use super::schema::{uuid_text, Json};
use super::Decoded;

/// Decodes one `__mirror_state` record.
pub(super) fn decode(offset: i64, value: Option<&[u8]>) -> Decoded {
    let parsed = value
        .ok_or_else(|| "the record has no value".to_string())
        .and_then(|value| {
            serde_json::from_slice::<MirrorStateRecord>(value)
                .map_err(|error| format!("the value is not a mirror state record: {error}"))
        });
    match parsed {
        Ok(record) => {
            let (key, payload) = describe(&record);
            Decoded::json(key, payload)
        }
        Err(reason) => Decoded::key_only(format!("Error at offset {offset}, skipping. {reason}")),
    }
}

fn describe(record: &MirrorStateRecord) -> (Json, Option<Json>) {
    match record {
        MirrorStateRecord::PartitionState { mirror, id, value } => (
            key("MirrorPartitionState", mirror, id),
            value.as_ref().map(|value| data(partition_state(value))),
        ),
        MirrorStateRecord::LastMirroredEpoch { mirror, id, value } => (
            key("LastMirrorEpochs", mirror, id),
            value.map(|(epoch, offset)| {
                data(vec![
                    ("lastMirrorEpoch", Json::Int(i64::from(epoch.0))),
                    ("lastMirrorOffset", Json::Int(offset.0)),
                ])
            }),
        ),
    }
}

fn key(record_type: &str, mirror: &str, id: &MirrorPartitionId) -> Json {
    Json::Object(vec![
        ("type", Json::Text(record_type.to_string())),
        (
            "data",
            Json::Object(vec![
                ("mirrorName", Json::Text(mirror.to_string())),
                ("topicId", topic_id(id.topic_id)),
                ("partition", Json::Int(i64::from(id.partition))),
            ]),
        ),
    ])
}

fn data(fields: Vec<(&'static str, Json)>) -> Json {
    Json::Object(vec![("data", Json::Object(fields))])
}

fn partition_state(value: &PartitionStateValue) -> Vec<(&'static str, Json)> {
    let text = |text: Option<&str>| text.map_or(Json::Null, |t| Json::Text(t.to_string()));
    vec![
        ("state", Json::Text(value.state.name().to_string())),
        ("leaderEpoch", Json::Int(i64::from(value.leader_epoch.0))),
        ("stateEpoch", Json::Int(i64::from(value.state_epoch))),
        (
            "previousState",
            text(value.previous_state.map(|s| s.name())),
        ),
        ("retryAttempt", Json::Int(i64::from(value.retry_attempt))),
        ("errorMessage", text(value.error_message.as_deref())),
        ("ownWritesOnly", Json::Bool(value.own_writes_only)),
        (
            "sourceTopicId",
            value.source_topic_id.map_or(Json::Null, topic_id),
        ),
    ]
}

/// Kafka's text for a topic id: the 16 bytes, most significant first, as `Uuid.toString()`.
fn topic_id(id: TopicId) -> Json {
    Json::Text(uuid_text(&id.0.to_be_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirrorsim::common::{LeaderEpoch, MirrorState, Offset};

    fn id() -> MirrorPartitionId {
        MirrorPartitionId {
            topic_id: TopicId(1),
            partition: 2,
        }
    }

    #[test]
    fn the_models_records_print_with_the_kips_field_names() {
        let record = MirrorStateRecord::PartitionState {
            mirror: "m1".into(),
            id: id(),
            value: Some(PartitionStateValue {
                state: MirrorState::Failed,
                leader_epoch: LeaderEpoch(4),
                state_epoch: 9,
                previous_state: Some(MirrorState::Mirroring),
                retry_attempt: 2,
                error_message: Some("source gone".into()),
                own_writes_only: false,
                source_topic_id: None,
            }),
        };
        let value = serde_json::to_vec(&record).unwrap();
        let decoded = decode(0, Some(&value));
        assert_eq!(
            decoded.printed().0.as_deref(),
            Some(
                r#"{"type":"MirrorPartitionState","data":{"mirrorName":"m1","topicId":"AAAAAAAAAAAAAAAAAAAAAQ","partition":2}}"#
            )
        );
        assert_eq!(
            decoded.printed().1.as_deref(),
            Some(
                r#"{"data":{"state":"FAILED","leaderEpoch":4,"stateEpoch":9,"previousState":"MIRRORING","retryAttempt":2,"errorMessage":"source gone","ownWritesOnly":false,"sourceTopicId":null}}"#
            )
        );
        let epochs = MirrorStateRecord::LastMirroredEpoch {
            mirror: "m1".into(),
            id: id(),
            value: Some((LeaderEpoch(3), Offset(120))),
        };
        let decoded = decode(0, Some(&serde_json::to_vec(&epochs).unwrap()));
        assert_eq!(
            decoded.printed().1.as_deref(),
            Some(r#"{"data":{"lastMirrorEpoch":3,"lastMirrorOffset":120}}"#)
        );
        let tombstone = MirrorStateRecord::LastMirroredEpoch {
            mirror: "m1".into(),
            id: id(),
            value: None,
        };
        let decoded = decode(0, Some(&serde_json::to_vec(&tombstone).unwrap()));
        assert!(decoded.printed().0.unwrap().contains("LastMirrorEpochs"));
        assert_eq!(decoded.printed().1.as_deref(), Some("<DELETE>"));
    }

    #[test]
    fn anything_else_is_an_error_line() {
        let decoded = decode(7, Some(b"{\"Nope\":1}"));
        assert!(decoded
            .printed()
            .0
            .unwrap()
            .starts_with("Error at offset 7, skipping. the value is not a mirror state record"));
        assert!(decode(7, None).printed().0.unwrap().contains("no value"));
    }
}
