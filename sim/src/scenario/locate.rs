//! Where in a scenario file a field is, so that every error names its file, its line and its
//! field path (`topics[1].partitions`, `faults.kill[2].nodes[0]`).
//!
//! Contract: [`Source::new`] parses the text into TOML's spanned document tree (a syntax error
//! becomes a [`ScenarioError`] at once) and indexes the span of every key and value by its field
//! path. Errors are then built from a path ([`Source::error`]: the line of that value, else of
//! the nearest enclosing entry the file has, so a missing key points at its table's header) or
//! from a serde error of the typed deserialisation ([`Source::deserialize_error`]: the path of
//! the innermost key or value the error's span falls in). Paths quote keys that are not bare
//! TOML keys (`admin.create_mirror[0].configs."mirror.topics.include"`).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::ScenarioError;

/// A scenario file's text with the span of every field path in it.
pub(super) struct Source<'a> {
    file: &'a Path,
    text: &'a str,
    /// Field path → the span of its value (for a table of an array of tables: its header).
    values: BTreeMap<String, Range<usize>>,
    /// Every key and value span with its path, for finding the field a span belongs to.
    spans: Vec<(Range<usize>, String)>,
}

impl<'a> Source<'a> {
    /// Parses `text`; a TOML syntax error (including a key given twice) is returned as the
    /// scenario error, naming the table the line is in and the key at the start of the line.
    pub(super) fn new(file: &'a Path, text: &'a str) -> Result<Self, ScenarioError> {
        let document = DeTable::parse(text).map_err(|error| {
            let offset = error.span().map_or(0, |span| span.start);
            ScenarioError {
                file: file.to_path_buf(),
                line: Some(line_of(text, offset)),
                field: syntax_context(text, offset),
                message: format!("TOML syntax: {}", error.message()),
            }
        })?;
        let mut source = Self {
            file,
            text,
            values: BTreeMap::new(),
            spans: Vec::new(),
        };
        source.index_table(document.get_ref(), "");
        Ok(source)
    }

    fn index_table(&mut self, table: &DeTable<'_>, prefix: &str) {
        for (key, value) in table.iter() {
            let path = join(prefix, key.get_ref());
            self.spans.push((key.span(), path.clone()));
            self.index_value(value, path);
        }
    }

    fn index_value(&mut self, value: &Spanned<DeValue<'_>>, path: String) {
        self.values.insert(path.clone(), value.span());
        self.spans.push((value.span(), path.clone()));
        match value.get_ref() {
            DeValue::Table(table) => self.index_table(table, &path),
            DeValue::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.index_value(item, format!("{path}[{index}]"));
                }
            }
            _ => {}
        }
    }

    /// 1-based line of a byte offset.
    pub(super) fn line_of(&self, offset: usize) -> usize {
        line_of(self.text, offset)
    }

    /// Whether the file gives `path` (a key that is present, with any value).
    pub(super) fn has(&self, path: &str) -> bool {
        self.values.contains_key(path)
    }

    /// The line of `path`'s value; for a path the file does not have (a missing key), the line
    /// of its nearest enclosing entry that it has, and line 1 for the top level.
    pub(super) fn line_of_path(&self, path: &str) -> usize {
        let mut current = path;
        loop {
            if let Some(span) = self.values.get(current) {
                return self.line_of(span.start);
            }
            match parent(current) {
                Some(up) => current = up,
                None => return 1,
            }
        }
    }

    /// An error about `field` (a field path), at the line of its value or enclosing table.
    pub(super) fn error(&self, field: &str, message: String) -> ScenarioError {
        ScenarioError {
            file: self.file.to_path_buf(),
            line: Some(self.line_of_path(field)),
            field: field.to_string(),
            message,
        }
    }

    /// An error at a spanned value (its span wins over the path's, which it equals in files;
    /// a value built in code has an empty span and falls back to the path).
    pub(super) fn error_at<T>(
        &self,
        spanned: &Spanned<T>,
        field: String,
        message: String,
    ) -> ScenarioError {
        let span = spanned.span();
        if span.is_empty() {
            return self.error(&field, message);
        }
        ScenarioError {
            file: self.file.to_path_buf(),
            line: Some(self.line_of(span.start)),
            field,
            message,
        }
    }

    /// The typed deserialisation's error, at the innermost field its span falls in (for a
    /// missing key: the table that lacks it, plus the key's name).
    pub(super) fn deserialize_error(&self, error: &toml::de::Error) -> ScenarioError {
        let message = error.message().to_string();
        let span = error.span().unwrap_or(0..0);
        let missing = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next());
        let mut field = match missing {
            // The span is the table that lacks the key: its header, or nothing for the top.
            Some(missing) => {
                let table = self
                    .values
                    .iter()
                    .filter(|(_, value)| **value == span && !span.is_empty())
                    // `topics` and `topics[0]` share the first header: the entry is meant.
                    .max_by_key(|(path, _)| path_depth(path))
                    .map_or("", |(path, _)| path.as_str());
                join(table, missing)
            }
            None => self.field_at(span.start).unwrap_or_default(),
        };
        if field.is_empty() {
            field = "(top level)".to_owned();
        }
        let line = match error.span() {
            Some(span) if !span.is_empty() => self.line_of(span.start),
            _ => self.line_of_path(&field),
        };
        ScenarioError {
            file: self.file.to_path_buf(),
            line: Some(line),
            field,
            message,
        }
    }

    /// The deepest field path whose key or value span holds `offset`.
    fn field_at(&self, offset: usize) -> Option<String> {
        self.spans
            .iter()
            .filter(|(span, _)| span.start <= offset && offset < span.end.max(span.start + 1))
            .max_by_key(|(span, path)| (path_depth(path), std::cmp::Reverse(span.len())))
            .map(|(_, path)| path.clone())
    }
}

/// 1-based line of a byte offset in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = floor_char_boundary(text, offset.min(text.len()));
    text[..end].matches('\n').count() + 1
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// How deep a path is: one per key and per array index.
fn path_depth(path: &str) -> usize {
    path.matches(['.', '[']).count() + usize::from(!path.is_empty())
}

/// `prefix.key`, with the key quoted when it is not a bare TOML key.
fn join(prefix: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
    let key = if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    };
    if prefix.is_empty() {
        key
    } else {
        format!("{prefix}.{key}")
    }
}

/// The path one level up (`topics[1].name` → `topics[1]` → `topics`), `None` at the top.
fn parent(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    if path.ends_with(']') {
        return path.rfind('[').map(|at| &path[..at]);
    }
    // A quoted last key may hold dots: cut before its opening quote.
    if let Some(unclosed) = path.strip_suffix('"') {
        let opening = unclosed.rfind('"')?;
        return Some(path[..opening].trim_end_matches('.'));
    }
    Some(path.rfind('.').map_or("", |at| &path[..at]))
}

/// For a syntax error at `offset`: the table the line belongs to (`[[topics]]` headers counted,
/// so the second is `topics[1]`) and the key the line starts with, else `(syntax)`.
fn syntax_context(text: &str, offset: usize) -> String {
    let error_line = line_of(text, offset);
    let mut table = String::new();
    let mut array_counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut key = None;
    for (number, line) in text.lines().enumerate() {
        let number = number + 1;
        let line = line.trim();
        if number == error_line {
            key = line
                .split_once('=')
                .map(|(key, _)| key.trim())
                .filter(|key| is_bare_dotted_key(key));
            break;
        }
        if let Some(name) = line.strip_prefix("[[").and_then(|l| l.split("]]").next()) {
            let name = name.trim().to_owned();
            if !is_bare_dotted_key(&name) {
                // A broken header (`[[`): which table follows is unknown.
                table.clear();
                continue;
            }
            let count = array_counts.entry(name.clone()).or_insert(0);
            table = format!("{name}[{count}]");
            *count += 1;
        } else if let Some(name) = line.strip_prefix('[').and_then(|l| l.split(']').next()) {
            let name = name.trim();
            table = if is_bare_dotted_key(name) {
                name.to_owned()
            } else {
                String::new()
            };
        }
    }
    match (table.is_empty(), key) {
        (true, Some(key)) => key.to_owned(),
        (false, Some(key)) => format!("{table}.{key}"),
        (false, None) => format!("{table} (syntax)"),
        (true, None) => "(syntax)".to_owned(),
    }
}

fn is_bare_dotted_key(key: &str) -> bool {
    !key.is_empty()
        && key.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> Source<'_> {
        Source::new(Path::new("t.toml"), text).expect("parses")
    }

    const TEXT: &str = "duration_ms = 10\n[[topics]]\nname = \"a\"\n\n[[topics]]\nname = \"b\"\n\
                        partitions = 3\n[faults]\n[[faults.kill]]\nat_ms = 1\n\
                        nodes = [\"x\", \"y\"]\n[[admin.create_mirror]]\n\
                        configs = { \"mirror.topics.include\" = \"o\" }\n";

    #[test]
    fn every_entry_of_an_array_of_tables_has_its_own_line() {
        let source = source(TEXT);
        assert_eq!(source.line_of_path("topics[0].name"), 3);
        assert_eq!(source.line_of_path("topics[1].name"), 6);
        assert_eq!(source.line_of_path("topics[1].partitions"), 7);
        // A missing key points at its table's header; a missing table at its parent.
        assert_eq!(source.line_of_path("topics[0].partitions"), 2);
        assert_eq!(source.line_of_path("topics[1].replication_factor"), 5);
        assert_eq!(source.line_of_path("faults.kill[0].nodes[1]"), 11);
        assert_eq!(source.line_of_path("faults.kill[0].other"), 9);
        assert_eq!(source.line_of_path("heal_ms"), 1);
        assert_eq!(
            source.line_of_path("admin.create_mirror[0].configs.\"mirror.topics.include\""),
            13
        );
        assert!(source.has("topics[1].partitions") && !source.has("topics[0].partitions"));
    }

    #[test]
    fn a_span_maps_to_the_innermost_field() {
        let source = source(TEXT);
        let offset = TEXT.find("\"y\"").unwrap();
        assert_eq!(
            source.field_at(offset).as_deref(),
            Some("faults.kill[0].nodes[1]")
        );
        let offset = TEXT.rfind("partitions").unwrap();
        assert_eq!(
            source.field_at(offset).as_deref(),
            Some("topics[1].partitions")
        );
    }

    #[test]
    fn syntax_errors_name_the_table_and_key_of_their_line() {
        let error = Source::new(
            Path::new("t.toml"),
            "a = 1\n[[topics]]\nx = 1\n[[topics]]\nname = = 2\n",
        )
        .err()
        .expect("a syntax error");
        assert_eq!(error.line, Some(5));
        assert_eq!(error.field, "topics[1].name");
        let error = Source::new(Path::new("t.toml"), "duration_ms = 1\nduration_ms = 2\n")
            .err()
            .expect("a duplicate key");
        assert_eq!(error.field, "duration_ms");
        let error = Source::new(Path::new("t.toml"), "[clusters\n")
            .err()
            .expect("bad header");
        assert_eq!((error.line, error.field.as_str()), (Some(1), "(syntax)"));
        // A broken array header leaves the following lines' table unknown (found by
        // sim/tests/fuzz_input.rs: `[[` named the table `[0]`).
        let error = Source::new(Path::new("t.toml"), "[[admin]]\n[[\nat_ms = 0\nc.\n")
            .err()
            .expect("bad header");
        assert!(error.field.starts_with('('), "{error}");
    }

    #[test]
    fn parents_walk_up_through_indices_and_quoted_keys() {
        assert_eq!(parent("a[1].b"), Some("a[1]"));
        assert_eq!(parent("a[1]"), Some("a"));
        assert_eq!(parent("a"), Some(""));
        assert_eq!(parent(""), None);
        assert_eq!(parent("x.configs.\"m.t\""), Some("x.configs"));
        assert_eq!(join("x", "m.t"), "x.\"m.t\"");
    }
}
