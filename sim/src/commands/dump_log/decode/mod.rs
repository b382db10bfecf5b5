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

use serde::ser::{Serialize, SerializeStruct, Serializer};

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

/// What a parser returns for one record: Kafka's `(Option[key], Option[payload])`, each
/// already a string, and their JSON trees where the decoder produced JSON (for our JSON
/// layout, which nests them instead of quoting them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decoded {
    pub key: Option<String>,
    pub payload: Option<String>,
    key_json: Option<Json>,
    payload_json: Option<Json>,
}

impl Decoded {
    /// Plain strings.
    fn text(key: Option<String>, payload: Option<String>) -> Self {
        Self {
            key,
            payload,
            key_json: None,
            payload_json: None,
        }
    }

    /// A JSON key and value; a tombstone's value prints `<DELETE>` as Kafka's parsers print it.
    fn json(key: Json, value: Option<Json>) -> Self {
        Self {
            key: Some(key.to_string()),
            payload: Some(
                value
                    .as_ref()
                    .map_or_else(|| "<DELETE>".to_string(), ToString::to_string),
            ),
            key_json: Some(key),
            payload_json: value,
        }
    }

    /// Only a key (Kafka's parsers put their "skipping" lines there) and no payload.
    fn key_only(key: String) -> Self {
        Self {
            key: Some(key),
            payload: None,
            key_json: None,
            payload_json: None,
        }
    }
}

/// In our JSON layout: `{"key": …, "payload": …}`, each a nested object where the decoder
/// produced JSON, else a string or `null`.
impl Serialize for Decoded {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("Decoded", 2)?;
        state.serialize_field("key", &Part(self.key.as_deref(), self.key_json.as_ref()))?;
        state.serialize_field(
            "payload",
            &Part(self.payload.as_deref(), self.payload_json.as_ref()),
        )?;
        state.end()
    }
}

struct Part<'a>(Option<&'a str>, Option<&'a Json>);

impl Serialize for Part<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (self.1, self.0) {
            (Some(json), _) => json.serialize(serializer),
            (None, Some(text)) => serializer.serialize_str(text),
            (None, None) => serializer.serialize_none(),
        }
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
        assert_eq!(decoded.payload.as_deref(), Some("v\u{fffd}"));
        let decoded = RecordDecoder::Strings.decode(0, Some(b"k"), None);
        assert_eq!(decoded.key.as_deref(), Some("k"));
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
