//! `--transaction-log-decoder`: the records of `__transaction_state`, printed as
//! kafka-dump-log's `TransactionLogMessageParser` (`TransactionLog.formatRecordKeyAndValue`)
//! prints them.
//!
//! Contract:
//! - The key is an int16 version (0) and `TransactionLogKey` (the transactional id); the value
//!   an int16 version and `TransactionLogValue` v0–1 (flexible from 1; its tagged fields, the
//!   previous and next producer ids and the client's transaction version, are not printed by
//!   Kafka and are skipped here).
//! - Key: `transaction_metadata::transactionalId=ID`; value:
//!   `producerId:P,producerEpoch:E,state=STATE,partitions=[t-0,…],txnLastUpdateTimestamp=T,txnTimeoutMs=M`,
//!   `STATE` Kafka's name for the status byte (`Empty`, `Ongoing`, `PrepareCommit`, …), the
//!   partitions left out in `Empty` as Kafka leaves them out; a tombstone prints `<DELETE>`; a
//!   key of another version prints `unknown::version=V` and no value.
//! - Kafka prints the partitions in the order of its hash set; here they are in stored order
//!   (the same members; the README says so).
//! - Where kafka-dump-log stops with an exception (no key, a value version or status it does
//!   not know, a record that does not decode), this prints `Error at offset O, skipping.
//!   REASON` as the offsets decoder does, and the dump goes on. A keyless record that is one of
//!   this model's transaction records (a `TransactionRecord` as JSON) prints as
//!   `{"type":"Metadata"}` and its body as stored.

use mirrorsim::coordinator::transaction::TransactionRecord;

use super::schema::{self, from, Field, Json, Message, Type, Versions, NONE};
use super::Decoded;

const TRANSACTION_LOG_KEY: Message = Message {
    name: "TransactionLogKey",
    valid: Versions(0, 0),
    flexible: NONE,
    fields: &[Field::new("transactionalId", Type::String, Versions(0, 0))],
};

const PARTITIONS: &[Field] = &[
    Field::new("topic", Type::String, from(0)),
    Field::new("partitionIds", Type::Array(&Type::Int32), from(0)),
];

const TRANSACTION_LOG_VALUE: Message = Message {
    name: "TransactionLogValue",
    valid: Versions(0, 1),
    flexible: from(1),
    fields: &[
        Field::new("producerId", Type::Int64, from(0)),
        Field::new("producerEpoch", Type::Int16, from(0)),
        Field::new("transactionTimeoutMs", Type::Int32, from(0)),
        Field::new("transactionStatus", Type::Int8, from(0)),
        Field::new(
            "transactionPartitions",
            Type::Array(&Type::Struct(PARTITIONS)),
            from(0),
        )
        .nullable(from(0)),
        Field::new("transactionLastUpdateTimestampMs", Type::Int64, from(0)),
        Field::new("transactionStartTimestampMs", Type::Int64, from(0)),
    ],
};

/// Kafka's `TransactionState` names by id.
const STATES: [&str; 8] = [
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
];

/// Decodes one `__transaction_state` record.
pub(super) fn decode(offset: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Decoded {
    match decode_record(key, value) {
        Ok(decoded) => decoded,
        Err(reason) => Decoded::key_only(format!("Error at offset {offset}, skipping. {reason}")),
    }
}

fn decode_record(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Decoded, String> {
    let Some(key) = key else {
        return super::model_record::<TransactionRecord>(value).ok_or_else(|| {
            "the record has no key (nor is it a transaction record of this model)".to_string()
        });
    };
    let (version, body) = schema::split_version(key).ok_or("the key has no version")?;
    if version != 0 {
        return Ok(Decoded::key_only(format!("unknown::version={version}")));
    }
    let key = schema::read(&TRANSACTION_LOG_KEY, version, body)
        .map_err(|error| format!("the key does not decode: {error}"))?;
    let id = text(&key, "transactionalId");
    let key_line = format!("transaction_metadata::transactionalId={id}");
    let Some(value) = value else {
        return Ok(Decoded::text(Some(key_line), Some("<DELETE>".to_string())));
    };
    let (version, body) = schema::split_version(value).ok_or("the value has no version")?;
    if !TRANSACTION_LOG_VALUE.valid.contains(version) {
        return Err(format!(
            "Unknown version {version} from the transaction log message value"
        ));
    }
    let value = schema::read(&TRANSACTION_LOG_VALUE, version, body)
        .map_err(|error| format!("the value does not decode: {error}"))?;
    Ok(Decoded::text(Some(key_line), Some(format_value(&value)?)))
}

fn format_value(value: &Json) -> Result<String, String> {
    let status = int(value, "transactionStatus");
    let state = usize::try_from(status)
        .ok()
        .and_then(|id| STATES.get(id))
        .ok_or_else(|| {
            format!("Unknown transaction state id {status} from the transaction status message")
        })?;
    let partitions = if *state == "Empty" {
        Vec::new()
    } else {
        topic_partitions(value)
    };
    Ok(format!(
        "producerId:{},producerEpoch:{},state={state},partitions=[{}],\
         txnLastUpdateTimestamp={},txnTimeoutMs={}",
        int(value, "producerId"),
        int(value, "producerEpoch"),
        partitions.join(","),
        int(value, "transactionLastUpdateTimestampMs"),
        int(value, "transactionTimeoutMs"),
    ))
}

/// `topic-partition` for every partition id of every topic entry (Kafka's
/// `TopicPartition.toString`), duplicates dropped as a set drops them.
fn topic_partitions(value: &Json) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let Some(Json::Array(entries)) = value.get("transactionPartitions") else {
        return names;
    };
    for entry in entries {
        let topic = text(entry, "topic");
        if let Some(Json::Array(ids)) = entry.get("partitionIds") {
            for id in ids {
                let name = format!("{topic}-{}", as_int(Some(id)));
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    names
}

fn text<'a>(value: &'a Json, field: &str) -> &'a str {
    match value.get(field) {
        Some(Json::Text(text)) => text,
        _ => "null",
    }
}

fn int(value: &Json, field: &str) -> i64 {
    as_int(value.get(field))
}

fn as_int(value: Option<&Json>) -> i64 {
    match value {
        Some(Json::Int(number)) => *number,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str) -> Vec<u8> {
        let mut key = 0i16.to_be_bytes().to_vec();
        key.extend((id.len() as i16).to_be_bytes());
        key.extend_from_slice(id.as_bytes());
        key
    }

    /// A v0 value: pid 1000, epoch 2, timeout 60000, the status, partitions, timestamps.
    fn value(status: i8, partitions: &[(&str, &[i32])]) -> Vec<u8> {
        let mut value = 0i16.to_be_bytes().to_vec();
        value.extend(1000i64.to_be_bytes());
        value.extend(2i16.to_be_bytes());
        value.extend(60_000i32.to_be_bytes());
        value.push(status as u8);
        value.extend((partitions.len() as i32).to_be_bytes());
        for (topic, ids) in partitions {
            value.extend((topic.len() as i16).to_be_bytes());
            value.extend_from_slice(topic.as_bytes());
            value.extend((ids.len() as i32).to_be_bytes());
            for id in *ids {
                value.extend(id.to_be_bytes());
            }
        }
        value.extend(1_700_000_000_123i64.to_be_bytes());
        value.extend(1_700_000_000_000i64.to_be_bytes());
        value
    }

    #[test]
    fn an_ongoing_transaction_prints_as_kafkas_transaction_log_formatter_prints_it() {
        let decoded = decode(0, Some(&key("tx-1")), Some(&value(1, &[("a", &[0, 2])])));
        assert_eq!(
            decoded.printed().0.as_deref(),
            Some("transaction_metadata::transactionalId=tx-1")
        );
        assert_eq!(
            decoded.printed().1.as_deref(),
            Some(
                "producerId:1000,producerEpoch:2,state=Ongoing,partitions=[a-0,a-2],\
                 txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000"
            )
        );
        // Empty leaves its partitions out, as Kafka does.
        let empty = decode(0, Some(&key("tx-1")), Some(&value(0, &[("a", &[0])])));
        assert!(empty
            .printed()
            .1
            .unwrap()
            .contains("state=Empty,partitions=[]"));
        let tombstone = decode(0, Some(&key("tx-1")), None);
        assert_eq!(tombstone.printed().1.as_deref(), Some("<DELETE>"));
    }

    #[test]
    fn other_versions_and_damage_are_lines_not_failures() {
        let decoded = decode(4, Some(&[0, 1, 0, 0]), Some(&[0, 0]));
        assert_eq!(decoded.printed().0.as_deref(), Some("unknown::version=1"));
        assert_eq!(decoded.payload, None);
        let decoded = decode(4, Some(&key("t")), Some(&value(9, &[])));
        assert_eq!(
            decoded.printed().0.as_deref(),
            Some(
                "Error at offset 4, skipping. Unknown transaction state id 9 from the \
                 transaction status message"
            )
        );
        let decoded = decode(4, Some(&key("t")), Some(&[0, 2]));
        assert!(decoded.printed().0.unwrap().contains("Unknown version 2"));
        let decoded = decode(4, None, None);
        assert!(decoded.printed().0.unwrap().contains("no key"));
        let full = value(1, &[("a", &[0])]);
        for cut in 2..full.len() {
            let decoded = decode(4, Some(&key("t")), Some(&full[..cut]));
            assert!(
                decoded
                    .printed()
                    .0
                    .unwrap()
                    .starts_with("Error at offset 4"),
                "cut {cut}"
            );
        }
    }
}
