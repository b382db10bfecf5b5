//! Lists of entries of several kinds kept in per-kind arrays of tables: the scripted faults
//! (`[[faults.kill]]`, `[[faults.packet_loss]]`, …) and the admin operations
//! (`[[admin.create_mirror]]`, …).
//!
//! Contract: a file lists each kind's entries under an array of tables of its own, so serde
//! checks every key against that kind's table type (a key of another kind is an unknown key,
//! a missing required key is missing from that table). In memory the entries of every kind
//! form one list in file order, the order of their tables whatever their kind, because that
//! order is part of what a run does: faults starting at the same time start in list order, and
//! a cluster's admin operations run in list order and are numbered by it.
//! - [`in_file_order`] merges the kinds' arrays into that list ([`positioned`] tags each entry
//!   with where its table starts);
//! - [`entry_paths`] gives back every entry's field path (`faults.kill[1]`), counting per kind
//!   as the file's arrays do;
//! - [`write_entries`] writes a list as one table per entry in list order (an array of tables
//!   may go on after other tables), so the text reads back as the same list; an entry
//!   serialises as `{KIND: [TABLE]}` ([`serialize_entry`]);
//! - [`tables_only`] reads a table of kinds only from a TOML table: serde's derived struct
//!   would take an array too, and a pre-typed `[[admin]]` array would then fail deep inside.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use toml::Spanned;

/// A kind's entries, each made a list entry by `kind` and tagged with where its table starts.
pub(super) fn positioned<T, E>(entries: Vec<Spanned<T>>, kind: fn(T) -> E) -> Vec<(usize, E)> {
    entries
        .into_iter()
        .map(|entry| (entry.span().start, kind(entry.into_inner())))
        .collect()
}

/// Every kind's [`positioned`] entries as one list in file order.
pub(super) fn in_file_order<E>(kinds: impl IntoIterator<Item = Vec<(usize, E)>>) -> Vec<E> {
    let mut entries: Vec<(usize, E)> = kinds.into_iter().flatten().collect();
    // Two tables never start at the same place, so the order is total.
    entries.sort_by_key(|(start, _)| *start);
    entries.into_iter().map(|(_, entry)| entry).collect()
}

/// The field path of every entry of a list read from `table`, given the entries' kinds in list
/// order: `TABLE.KIND[N]`, N counting the entries of that kind before it.
pub(crate) fn entry_paths<'a>(
    table: &str,
    kinds: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    kinds
        .into_iter()
        .map(|kind| {
            let index = seen.entry(kind).or_insert(0);
            let path = format!("{table}.{kind}[{index}]");
            *index += 1;
            path
        })
        .collect()
}

/// One entry as its file holds it, `{KIND: [TABLE]}`: an array of one table under its kind.
pub(super) fn serialize_entry<S: Serializer, T: Serialize>(
    serializer: S,
    kind: &str,
    table: &T,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(1))?;
    map.serialize_entry(kind, std::slice::from_ref(table))?;
    map.end()
}

/// Appends `entries` to `out` as TOML, one `[[TABLE.KIND]]` each, in list order. Serialised as
/// arrays, TOML would group them by kind and lose their order across kinds.
pub(crate) fn write_entries<E: Serialize>(
    table: &str,
    entries: &[E],
    out: &mut String,
) -> Result<(), toml::ser::Error> {
    for entry in entries {
        let document = BTreeMap::from([(table, entry)]);
        out.push('\n');
        out.push_str(&toml::to_string(&document)?);
    }
    Ok(())
}

/// Deserialises `T`, a table of kinds, from a TOML table only; anything else is refused as
/// not being `expecting`.
pub(super) fn tables_only<'de, D, T>(
    deserializer: D,
    expecting: &'static str,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_map(TableVisitor {
        expecting,
        table: PhantomData,
    })
}

struct TableVisitor<T> {
    expecting: &'static str,
    table: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for TableVisitor<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.expecting)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_count_per_kind_in_list_order() {
        let paths = entry_paths("faults", ["kill", "pause", "kill", "kill", "pause"]);
        assert_eq!(
            paths,
            [
                "faults.kill[0]",
                "faults.pause[0]",
                "faults.kill[1]",
                "faults.kill[2]",
                "faults.pause[1]"
            ]
        );
    }

    #[test]
    fn entries_merge_by_where_their_tables_start() {
        let kills = vec![Spanned::new(10..20, 'a'), Spanned::new(50..60, 'c')];
        let pauses = vec![Spanned::new(30..40, 'b'), Spanned::new(5..8, 'z')];
        let merged = in_file_order([
            positioned(kills, |c: char| (c, "kill")),
            positioned(pauses, |c: char| (c, "pause")),
        ]);
        assert_eq!(
            merged,
            [('z', "pause"), ('a', "kill"), ('b', "pause"), ('c', "kill")]
        );
    }
}
