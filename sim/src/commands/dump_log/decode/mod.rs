//! kafka-dump-log's message parsers: how a data record's key and value are shown.
//!
//! Contract:
//! - [`RecordDecoder::Strings`] is Kafka's default `StringDecoder` (the bytes as UTF-8, malformed
//!   input replaced); it is what `--print-data-log` prints in the kafka layout.
//! - [`RecordDecoder::Offsets`] (`--offsets-decoder`, `offsets.rs`),
//!   [`RecordDecoder::TransactionLog`] (`--transaction-log-decoder`, `transactions.rs`) and
//!   [`RecordDecoder::MirrorState`] (`--mirror-state-decoder`, `mirror_state.rs`) read the
//!   records of `__consumer_offsets`, `__transaction_state` and `__mirror_state`.
//! - A decoder never fails: a record it cannot read becomes a line that says why (Kafka's
//!   wording where Kafka has one), and the dump goes on. Control records are not given to a
//!   decoder, as Kafka does not give them to its parsers.

mod mirror_state;
mod offsets;
pub(crate) mod schema;
mod transactions;

use std::fmt;

use serde::ser::{Serialize, Serializer};

use schema::Json;

/// How data records' keys and values are decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecordDecoder {
    /// Kafka's `StringDecoder`.
    #[default]
    Strings,
    /// `__consumer_offsets`.
    Offsets,
    /// `__transaction_state`.
    TransactionLog,
    /// `__mirror_state`, as this model's coordinator writes it.
    MirrorState,
}

impl RecordDecoder {
    /// Whether this is one of the topic decoders (which, as in kafka-dump-log, imply
    /// `--print-data-log`).
    pub fn is_topic_decoder(self) -> bool {
        self != Self::Strings
    }

    /// The key and payload of a data record as this decoder shows them.
    pub(super) fn decode(self, offset: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Decoded {
        match self {
            Self::Strings => {
                let lossy = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
                Decoded::text(key.map(lossy), value.map(lossy))
            }
            Self::Offsets => offsets::decode(offset, key, value),
            Self::TransactionLog => transactions::decode(offset, key, value),
            Self::MirrorState => mirror_state::decode(offset, value),
        }
    }
}

/// A record as this model's coordinators store one (`coordinator::runtime::encode_records`):
/// no key, the value the JSON of the coordinator's record enum `T`, `{"Variant":{…}}`. Shown as
/// the key `{"type":"Variant"}` and the variant's body as stored; `None` when the value is not
/// a `T`.
fn model_record<T: serde::de::DeserializeOwned>(value: Option<&[u8]>) -> Option<Decoded> {
    let value = value?;
    serde_json::from_slice::<T>(value).ok()?;
    let parsed: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>> =
        serde_json::from_slice(value).ok()?;
    let (variant, body) = parsed.into_iter().next()?;
    let key = Json::Object(vec![("type", Json::Text(variant))]);
    Some(Decoded::json(key, Some(Json::Raw(body.get().to_string()))))
}

/// What a parser returns for one record: Kafka's `(Option[key], Option[payload])`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Decoded {
    pub key: Option<Part>,
    pub payload: Option<Part>,
}

/// One side of a decoded record. Printed as the parser's string; in our JSON layout a JSON part
/// is nested as itself instead of quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// A decoder's JSON (the offsets and mirror-state decoders).
    Json(Json),
    /// Text (Kafka's string decoder, the transaction log's lines, the "skipping" lines).
    Text(String),
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Json(json) => json.fmt(f),
            Self::Text(text) => f.write_str(text),
        }
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Json(json) => json.serialize(serializer),
            Self::Text(text) => serializer.serialize_str(text),
        }
    }
}

impl Decoded {
    /// Plain strings.
    fn text(key: Option<String>, payload: Option<String>) -> Self {
        Self {
            key: key.map(Part::Text),
            payload: payload.map(Part::Text),
        }
    }

    /// A JSON key and value; a tombstone's value prints `<DELETE>` as Kafka's parsers print it.
    fn json(key: Json, value: Option<Json>) -> Self {
        Self {
            key: Some(Part::Json(key)),
            payload: Some(value.map_or_else(|| Part::Text("<DELETE>".to_string()), Part::Json)),
        }
    }

    /// Only a key (Kafka's parsers put their "skipping" lines there) and no payload.
    fn key_only(key: String) -> Self {
        Self {
            key: Some(Part::Text(key)),
            payload: None,
        }
    }

    /// The key and payload as printed (for tests).
    #[cfg(test)]
    pub(crate) fn printed(&self) -> (Option<String>, Option<String>) {
        let text = |part: &Option<Part>| part.as_ref().map(ToString::to_string);
        (text(&self.key), text(&self.payload))
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Self::Null => serializer.serialize_none(),
            Self::Bool(value) => serializer.serialize_bool(*value),
            Self::Raw(text) => match serde_json::value::RawValue::from_string(text.clone()) {
                Ok(raw) => raw.serialize(serializer),
                Err(_) => serializer.serialize_str(text),
            },
            Self::Int(value) => serializer.serialize_i64(*value),
            Self::Text(text) => serializer.serialize_str(text),
            // Bytes as Kafka's JSON shows them: base64 text.
            Self::Bytes(_) => {
                let quoted = self.to_string();
                serializer.serialize_str(&quoted[1..quoted.len() - 1])
            }
            Self::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Self::Object(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (name, value) in fields {
                    map.serialize_entry(name, value)?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_string_decoder_prints_keys_only_when_present_and_replaces_bad_utf8() {
        let decoded = RecordDecoder::Strings.decode(0, None, Some(b"v\xff"));
        assert_eq!(decoded.key, None);
        assert_eq!(decoded.printed().1.as_deref(), Some("v\u{fffd}"));
        let decoded = RecordDecoder::Strings.decode(0, Some(b"k"), None);
        assert_eq!(decoded.printed().0.as_deref(), Some("k"));
        assert_eq!(decoded.payload, None);
    }

    #[test]
    fn json_parts_nest_as_objects_and_text_parts_stay_strings() {
        let decoded = Decoded::json(
            Json::Object(vec![("type", Json::Text("1".into()))]),
            Some(Json::Object(vec![("b", Json::Bytes(vec![1, 2]))])),
        );
        assert_eq!(
            serde_json::to_string(&decoded).unwrap(),
            r#"{"key":{"type":"1"},"payload":{"b":"AQI="}}"#
        );
        let decoded = Decoded::key_only("Error at offset 1, skipping. x".into());
        assert_eq!(
            serde_json::to_string(&decoded).unwrap(),
            r#"{"key":"Error at offset 1, skipping. x","payload":null}"#
        );
    }
}
