//! Kafka's message schemas as data, read from bytes into JSON the way Kafka's generated
//! `JsonConverter`s write it.
//!
//! Contract:
//! - A [`Message`] is a table transcribed from one of Kafka's JSON message definitions
//!   (`OffsetCommitValue.json`, `TransactionLogValue.json`, …): its valid versions, its flexible
//!   versions and its fields, each with the versions it exists in and those it may be null in.
//! - [`read`] decodes one message of a given version from the front of a byte slice as Kafka's
//!   generated `read(Readable, short)` does: classic encodings (int16 string lengths, int32
//!   array and bytes lengths, −1 for null) before the first flexible version, compact ones
//!   (unsigned varint length + 1, 0 for null) and a tagged-field section after every struct
//!   from it on. A tagged field the schema knows is decoded and, as Kafka's converters write
//!   it, appears in the JSON at its place in the schema only when it differs from its default;
//!   unknown tags are skipped. Bytes after the message are left alone, as Kafka leaves them.
//! - The result is a [`Json`] tree whose objects keep the schema's field order and whose
//!   [`fmt::Display`] is Jackson's compact `JsonNode.toString()`: strings escaped as Jackson
//!   escapes them, bytes as padded standard base64, UUIDs as Kafka's `Uuid.toString()`.
//! - Bad bytes give a [`SchemaError`] naming the message, the field and the byte; nothing here
//!   panics.

use std::fmt;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;

/// An inclusive range of versions (`"0+"` is `Versions(0, i16::MAX)`, `"none"` is [`NONE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Versions(pub i16, pub i16);

/// No version at all (`"nullableVersions"` left out, `"flexibleVersions": "none"`).
pub(crate) const NONE: Versions = Versions(1, 0);

/// Every version from `low` on (`"N+"`).
pub(crate) const fn from(low: i16) -> Versions {
    Versions(low, i16::MAX)
}

impl Versions {
    pub(crate) fn contains(self, version: i16) -> bool {
        self.0 <= version && version <= self.1
    }
}

/// A field's type.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Type {
    Int8,
    Int16,
    Int32,
    Int64,
    Uuid,
    String,
    Bytes,
    /// `[]int32` and the like.
    Array(&'static Type),
    /// A struct's fields (an array element or a nested struct).
    Struct(&'static [Field]),
}

/// One field of a schema. `name` is the JSON name (Kafka's camel case: the schema's name with
/// its first letter lowered).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    pub name: &'static str,
    pub ty: Type,
    pub versions: Versions,
    pub nullable: Versions,
    /// For a tagged field: its tag and its default (an integer's; a UUID's is all zeroes).
    pub tagged: Option<(u32, i64)>,
}

impl Field {
    /// A field that is never null.
    pub(crate) const fn new(name: &'static str, ty: Type, versions: Versions) -> Self {
        Self {
            name,
            ty,
            versions,
            nullable: NONE,
            tagged: None,
        }
    }

    /// The same field, tagged with `tag` (its versions are its tagged versions), printed only
    /// when it differs from `default`.
    pub(crate) const fn tagged(self, tag: u32, default: i64) -> Self {
        Self {
            tagged: Some((tag, default)),
            ..self
        }
    }

    /// Whether a decoded tagged value is its field's default (and so is not printed): an
    /// integer equal to it, the zero UUID, or null.
    fn is_default(&self, value: &Json) -> bool {
        match (self.tagged, value) {
            (Some(_), Json::Null) => true,
            (Some((_, default)), Json::Int(number)) => *number == default,
            (Some(_), Json::Text(text)) if matches!(self.ty, Type::Uuid) => {
                *text == uuid_text(&[0; 16])
            }
            _ => false,
        }
    }

    /// The same field, nullable in `versions`.
    pub(crate) const fn nullable(self, versions: Versions) -> Self {
        Self {
            nullable: versions,
            ..self
        }
    }
}

/// A top-level message definition.
#[derive(Debug)]
pub(crate) struct Message {
    /// Kafka's class name, as its errors name it.
    pub name: &'static str,
    pub valid: Versions,
    pub flexible: Versions,
    pub fields: &'static [Field],
}

/// A decoded value, printed as Jackson prints a `JsonNode`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Int(i64),
    /// A JSON string (also a UUID, already in Kafka's text form).
    Text(String),
    /// Bytes, printed as base64.
    Bytes(Vec<u8>),
    Array(Vec<Json>),
    /// Fields in schema order.
    Object(Vec<(&'static str, Json)>),
    /// A JSON document kept as the text it was stored as (the model's coordinator records).
    Raw(String),
}

impl Json {
    /// The value of `name` if this is an object that has it.
    pub(crate) fn get(&self, name: &str) -> Option<&Json> {
        match self {
            Self::Object(fields) => fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value of `name`, mutable.
    pub(crate) fn get_mut(&mut self, name: &str) -> Option<&mut Json> {
        match self {
            Self::Object(fields) => fields.iter_mut().find(|(n, _)| *n == name).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Null => f.write_str("null"),
            Self::Bool(value) => write!(f, "{value}"),
            Self::Raw(text) => f.write_str(text),
            Self::Int(value) => write!(f, "{value}"),
            Self::Text(text) => write_json_string(f, text),
            Self::Bytes(bytes) => write!(f, "\"{}\"", STANDARD.encode(bytes)),
            Self::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    item.fmt(f)?;
                }
                f.write_str("]")
            }
            Self::Object(fields) => {
                f.write_str("{")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write_json_string(f, name)?;
                    f.write_str(":")?;
                    value.fmt(f)?;
                }
                f.write_str("}")
            }
        }
    }
}

/// A JSON string as Jackson writes one: `"` and `\` escaped, the five control characters that
/// have a short escape written with it, the other control characters below U+0020 as `\u00XX`
/// (upper-case hex), everything else (non-ASCII included) as it is.
fn write_json_string(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in text.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            '\u{8}' => f.write_str("\\b")?,
            '\u{c}' => f.write_str("\\f")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04X}", c as u32)?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

/// Kafka's `Uuid.toString()`: the 16 bytes in URL-safe base64 without padding.
pub(crate) fn uuid_text(bytes: &[u8; 16]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Why a message did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaError {
    /// Byte position in the decoded slice (after the version prefix), `None` when the version
    /// itself is refused.
    pub position: Option<usize>,
    pub reason: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)?;
        match self.position {
            Some(position) => write!(f, " (at byte {position} after the version)"),
            None => Ok(()),
        }
    }
}

/// Decodes `message` at `version` from the front of `bytes`.
pub(crate) fn read(message: &Message, version: i16, bytes: &[u8]) -> Result<Json, SchemaError> {
    if !message.valid.contains(version) {
        return Err(SchemaError {
            position: None,
            reason: format!("Can't read version {version} of {}", message.name),
        });
    }
    let mut reader = Reader {
        bytes,
        position: 0,
        message: message.name,
        version,
        flexible: message.flexible.contains(version),
        in_tag: false,
    };
    reader.read_struct(message.fields)
}

/// Reads a big-endian int16 version prefix (the key's record type or the value's version),
/// returning it and the bytes after it.
pub(crate) fn split_version(bytes: &[u8]) -> Option<(i16, &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<2>()?;
    Some((i16::from_be_bytes(*head), rest))
}

#[derive(Clone, Copy)]
struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
    message: &'static str,
    version: i16,
    flexible: bool,
    /// Reading a tagged field's body (where a nullable struct's marker is a varint).
    in_tag: bool,
}

impl<'a> Reader<'a> {
    fn read_struct(&mut self, fields: &'static [Field]) -> Result<Json, SchemaError> {
        let mut values = Vec::with_capacity(fields.len());
        for field in fields {
            let present = field.versions.contains(self.version) && field.tagged.is_none();
            values.push(if present {
                Some(self.read_field(field)?)
            } else {
                None
            });
        }
        if self.flexible {
            self.read_tagged_fields(fields, &mut values)?;
        }
        let object = fields
            .iter()
            .zip(values)
            .filter_map(|(field, value)| value.map(|value| (field.name, value)))
            .collect();
        Ok(Json::Object(object))
    }

    /// The tagged-field section: known tags decoded into `values` (left out when they hold
    /// their default), unknown ones skipped.
    fn read_tagged_fields(
        &mut self,
        fields: &'static [Field],
        values: &mut [Option<Json>],
    ) -> Result<(), SchemaError> {
        let section = Field::new("_taggedFields", Type::Int8, from(0));
        let count = self.unsigned_varint(&section)?;
        for _ in 0..count {
            let tag = self.unsigned_varint(&section)?;
            let size = self.unsigned_varint(&section)? as usize;
            let start = self.position;
            let body = self.slice(&section, size)?;
            let known = fields.iter().position(|field| {
                field.tagged.is_some_and(|(t, _)| t == tag) && field.versions.contains(self.version)
            });
            let Some(index) = known else {
                continue;
            };
            let field = &fields[index];
            let mut inner = Reader {
                bytes: body,
                position: 0,
                in_tag: true,
                ..*self
            };
            let value = inner.read_field(field).map_err(|mut error| {
                error.position = error.position.map(|p| p + start);
                error
            })?;
            values[index] = (!field.is_default(&value)).then_some(value);
        }
        Ok(())
    }

    fn read_field(&mut self, field: &Field) -> Result<Json, SchemaError> {
        let nullable = field.nullable.contains(self.version);
        let value = match field.ty {
            Type::Int8 => Json::Int(i64::from(self.take::<1>(field)?[0] as i8)),
            Type::Int16 => Json::Int(i64::from(i16::from_be_bytes(self.take(field)?))),
            Type::Int32 => Json::Int(i64::from(i32::from_be_bytes(self.take(field)?))),
            Type::Int64 => Json::Int(i64::from_be_bytes(self.take(field)?)),
            Type::Uuid => Json::Text(uuid_text(&self.take(field)?)),
            Type::String => match self.length(field, false)? {
                None => Json::Null,
                Some(length) => {
                    let start = self.position;
                    let message = self.message;
                    let bytes = self.slice(field, length)?;
                    let text = std::str::from_utf8(bytes).map_err(|_| SchemaError {
                        position: Some(start),
                        reason: format!("{message}: field {} is not UTF-8", field.name),
                    })?;
                    Json::Text(text.to_string())
                }
            },
            Type::Bytes => match self.length(field, true)? {
                None => Json::Null,
                Some(length) => Json::Bytes(self.slice(field, length)?.to_vec()),
            },
            Type::Array(element) => match self.length(field, true)? {
                None => Json::Null,
                Some(count) => self.read_array(field, element, count)?,
            },
            // A nullable struct carries a presence marker: an int8, −1 for null, or, as a
            // tagged field's body, an unsigned varint, 0 for null.
            Type::Struct(fields) if nullable => {
                let null = if self.in_tag {
                    self.unsigned_varint(field)? == 0
                } else {
                    (self.take::<1>(field)?[0] as i8) < 0
                };
                if null {
                    Json::Null
                } else {
                    self.read_struct(fields)?
                }
            }
            Type::Struct(fields) => self.read_struct(fields)?,
        };
        if value == Json::Null && !nullable {
            return Err(self.error(format!(
                "non-nullable field {} was serialized as null",
                field.name
            )));
        }
        Ok(value)
    }

    fn read_array(
        &mut self,
        field: &Field,
        element: &Type,
        count: usize,
    ) -> Result<Json, SchemaError> {
        // Every element takes at least one byte: a count beyond the bytes left is damage, and
        // is refused before anything is allocated for it.
        if count > self.bytes.len() - self.position {
            return Err(self.error(format!(
                "{}: field {} claims {count} elements, more than the bytes left",
                self.message, field.name
            )));
        }
        let element_field = Field::new(field.name, *element, Versions(0, i16::MAX));
        let mut items = Vec::with_capacity(count);
        for _ in 0..count {
            items.push(self.read_field(&element_field)?);
        }
        Ok(Json::Array(items))
    }

    /// A length prefix: compact (unsigned varint, length + 1) in flexible versions, else int16
    /// for strings and int32 for bytes and arrays; `None` is null.
    fn length(&mut self, field: &Field, wide: bool) -> Result<Option<usize>, SchemaError> {
        let length: i64 = if self.flexible {
            i64::from(self.unsigned_varint(field)?) - 1
        } else if wide {
            i64::from(i32::from_be_bytes(self.take(field)?))
        } else {
            i64::from(i16::from_be_bytes(self.take(field)?))
        };
        match length {
            -1 => Ok(None),
            n if n < 0 => Err(self.error(format!(
                "{}: field {} has length {n}",
                self.message, field.name
            ))),
            n => Ok(Some(n as usize)),
        }
    }

    fn unsigned_varint(&mut self, field: &Field) -> Result<u32, SchemaError> {
        let mut value: u32 = 0;
        for shift in (0..35).step_by(7) {
            let byte = self.take::<1>(field)?[0];
            value |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.error(format!(
            "{}: field {}: varint longer than 5 bytes",
            self.message, field.name
        )))
    }

    fn take<const N: usize>(&mut self, field: &Field) -> Result<[u8; N], SchemaError> {
        let bytes = self.slice(field, N)?;
        Ok(bytes.try_into().expect("slice has N bytes"))
    }

    fn slice(&mut self, field: &Field, length: usize) -> Result<&'a [u8], SchemaError> {
        let end = self.position.checked_add(length);
        let bytes: &'a [u8] = self.bytes;
        match end.and_then(|end| bytes.get(self.position..end)) {
            Some(bytes) => {
                self.position += length;
                Ok(bytes)
            }
            None => Err(self.error(format!(
                "{}: field {} needs {length} bytes, {} left",
                self.message,
                field.name,
                self.bytes.len() - self.position
            ))),
        }
    }

    fn error(&self, reason: String) -> SchemaError {
        SchemaError {
            position: Some(self.position),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POINT: &[Field] = &[
        Field::new("x", Type::Int32, from(0)),
        Field::new("origin", Type::Uuid, from(2)).tagged(0, 0),
        Field::new("label", Type::String, from(1)).nullable(from(1)),
        Field::new("tags", Type::Array(&Type::Int16), from(0)),
        Field::new("weight", Type::Int64, from(2)).tagged(1, -1),
    ];
    const MESSAGE: Message = Message {
        name: "Point",
        valid: Versions(0, 2),
        flexible: from(2),
        fields: POINT,
    };

    #[test]
    fn classic_and_flexible_encodings_read_to_the_same_json() {
        // v1: int32, int16-length string, int32-count array.
        let classic = [0, 0, 0, 7, 0, 2, b'h', b'i', 0, 0, 0, 1, 0, 9];
        // v2: int32, compact string (len+1), compact array (count+1), empty tagged section.
        let flexible = [0, 0, 0, 7, 3, b'h', b'i', 2, 0, 9, 0];
        let expected = r#"{"x":7,"label":"hi","tags":[9]}"#;
        assert_eq!(read(&MESSAGE, 1, &classic).unwrap().to_string(), expected);
        assert_eq!(read(&MESSAGE, 2, &flexible).unwrap().to_string(), expected);
        // v0 has no label.
        let v0 = [0, 0, 0, 7, 0, 0, 0, 0];
        assert_eq!(
            read(&MESSAGE, 0, &v0).unwrap().to_string(),
            r#"{"x":7,"tags":[]}"#
        );
    }

    #[test]
    fn known_tags_print_at_their_place_unless_default_and_unknown_tags_are_skipped() {
        // An unknown tag (5, 2 bytes) in the struct's tagged section.
        let tagged = [0, 0, 0, 1, 0, 1, 1, 5, 2, 0xaa, 0xbb];
        assert_eq!(
            read(&MESSAGE, 2, &tagged).unwrap().to_string(),
            r#"{"x":1,"label":null,"tags":[]}"#
        );
        // Tag 1 (weight = 7) then tag 0 (a non-zero UUID): printed in schema order.
        let mut tagged = vec![0, 0, 0, 1, 0, 1, 2, 1, 8, 0, 0, 0, 0, 0, 0, 0, 7, 0, 16];
        tagged.extend([0u8; 15]);
        tagged.push(0xfb);
        assert_eq!(
            read(&MESSAGE, 2, &tagged).unwrap().to_string(),
            r#"{"x":1,"origin":"AAAAAAAAAAAAAAAAAAAA-w","label":null,"tags":[],"weight":7}"#
        );
        // The same tags holding their defaults (−1, the zero UUID) are left out.
        let mut tagged = vec![0, 0, 0, 1, 0, 1, 2, 1, 8, 0xff, 0xff, 0xff, 0xff];
        tagged.extend([0xff, 0xff, 0xff, 0xff, 0, 16]);
        tagged.extend([0u8; 16]);
        assert_eq!(
            read(&MESSAGE, 2, &tagged).unwrap().to_string(),
            r#"{"x":1,"label":null,"tags":[]}"#
        );
        // A tag whose body is shorter than its field names the byte where the body starts.
        let error = read(&MESSAGE, 2, &[0, 0, 0, 1, 0, 1, 1, 1, 2, 0, 0]).unwrap_err();
        assert_eq!(error.position, Some(9));
    }

    #[test]
    fn a_nullable_struct_has_a_presence_byte() {
        const INNER: &[Field] = &[Field::new("n", Type::Int8, from(0))];
        const OUTER: Message = Message {
            name: "Outer",
            valid: Versions(0, 0),
            flexible: from(0),
            fields: &[
                Field::new("a", Type::Struct(INNER), from(0)).nullable(from(0)),
                Field::new("b", Type::Struct(INNER), from(0))
                    .nullable(from(0))
                    .tagged(0, 0),
            ],
        };
        // a: present (int8 1, n = 5, its tagged section), then the outer tagged section with b
        // present (tag 0, size 3: varint 1, n = 6, its tagged section).
        let bytes = [1, 5, 0, 1, 0, 3, 1, 6, 0];
        assert_eq!(
            read(&OUTER, 0, &bytes).unwrap().to_string(),
            r#"{"a":{"n":5},"b":{"n":6}}"#
        );
        // a null (int8 −1), b absent: a prints null, b (tagged, default null) is left out.
        assert_eq!(
            read(&OUTER, 0, &[0xff, 0]).unwrap().to_string(),
            r#"{"a":null}"#
        );
        // b tagged but null (varint 0): left out as its default.
        let bytes = [1, 5, 0, 1, 0, 1, 0];
        assert_eq!(
            read(&OUTER, 0, &bytes).unwrap().to_string(),
            r#"{"a":{"n":5}}"#
        );
    }

    #[test]
    fn null_is_refused_where_not_nullable() {
        // A null array where the schema has no nullable versions.
        let error = read(
            &MESSAGE,
            1,
            &[0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        );
        assert!(error
            .unwrap_err()
            .reason
            .contains("non-nullable field tags"));
    }

    #[test]
    fn damage_is_an_error_naming_the_field_never_a_panic() {
        let error = read(&MESSAGE, 1, &[0, 0, 0, 1, 0, 9, b'a']).unwrap_err();
        assert_eq!(error.reason, "Point: field label needs 9 bytes, 1 left");
        assert_eq!(error.position, Some(6));
        let error = read(
            &MESSAGE,
            1,
            &[0, 0, 0, 1, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff],
        );
        assert!(error
            .unwrap_err()
            .reason
            .contains("more than the bytes left"));
        let error = read(&MESSAGE, 3, &[]).unwrap_err();
        assert_eq!(error.reason, "Can't read version 3 of Point");
        for cut in 0..14 {
            let classic = [0, 0, 0, 7, 0, 2, b'h', b'i', 0, 0, 0, 1, 0, 9];
            assert!(read(&MESSAGE, 1, &classic[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn strings_bytes_and_uuids_print_as_jackson_and_kafka_print_them() {
        let value = Json::Object(vec![
            ("s", Json::Text("a\"b\\c\n\u{1}é/".into())),
            ("b", Json::Bytes(vec![0xfb, 0xff])),
            ("e", Json::Bytes(vec![])),
            ("n", Json::Null),
            ("i", Json::Int(-5)),
        ]);
        assert_eq!(
            value.to_string(),
            r#"{"s":"a\"b\\c\n\u0001é/","b":"+/8=","e":"","n":null,"i":-5}"#
        );
        // Kafka's Uuid.toString of 0x00..01: URL-safe base64, no padding.
        let mut uuid = [0u8; 16];
        uuid[15] = 0xfb;
        assert_eq!(uuid_text(&uuid), "AAAAAAAAAAAAAAAAAAAA-w");
    }
}
