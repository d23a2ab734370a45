//! Row readers: each upstream table read once, in table order, with Go's TEXT-or-BLOB columns
//! decoded the same way everywhere.

use super::{Reader, Tag};
use crate::catalog::csv;
use crate::diag::Rule;
use crate::model::*;
use anyhow::Result;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

pub(super) struct BundleRow {
    pub(super) csv: Option<Value>,
    pub(super) objects: Vec<Value>,
    pub(super) bundlepath: String,
    pub(super) version: String,
    pub(super) skip_range: String,
    pub(super) substitutes_for: String,
}

pub(super) struct EntryRow {
    pub(super) id: i64,
    pub(super) bundle: String,
    pub(super) replaces: Option<i64>,
    pub(super) depth: i64,
}

pub(super) fn opt_string(v: Option<String>) -> String {
    v.unwrap_or_default()
}

/// A text column that Go may have written as TEXT or as BLOB (`[]byte`); NULL → `None`.
pub(super) fn text(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    use rusqlite::types::ValueRef;
    Ok(match r.get_ref(i)? {
        ValueRef::Null => None,
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
    })
}

/// Splits a stream of concatenated JSON values (`operatorbundle.bundle`).
pub(super) fn split_objects(text: &str) -> std::result::Result<Vec<Value>, serde_json::Error> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect()
}

impl Reader<'_> {
    /// `operatorbundle` rows by name, with version and skipRange filled from the CSV where the
    /// columns are absent (schema < 5) or empty.
    pub(super) fn bundle_rows(&mut self) -> Result<BTreeMap<String, BundleRow>> {
        let col = |since: i64, c: &str| {
            if self.version >= since {
                c.to_string()
            } else {
                "NULL".to_string()
            }
        };
        let sql = format!(
            "SELECT name, csv, bundle, {}, {}, {}, {} FROM operatorbundle ORDER BY rowid",
            col(2, "bundlepath"),
            col(5, "version"),
            col(5, "skiprange"),
            col(11, "substitutesfor"),
        );
        type Raw = (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let raw: Vec<Raw> = {
            let mut st = self.conn.prepare(&sql)?;
            let rows = st.query_map([], |r| {
                Ok((
                    text(r, 0)?,
                    text(r, 1)?,
                    text(r, 2)?,
                    text(r, 3)?,
                    text(r, 4)?,
                    text(r, 5)?,
                    text(r, 6)?,
                ))
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut out = BTreeMap::new();
        let mut nameless = 0;
        for (name, csv, bundle, path, version, range, subst) in raw {
            let Some(name) = name.filter(|n| !n.is_empty()) else {
                nameless += 1;
                continue;
            };
            let csv_value = match csv.as_deref().filter(|s| !s.trim().is_empty()) {
                None => None,
                Some(text) => match serde_json::from_str::<Value>(text) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        self.warn(
                            Rule::Parse,
                            format!("operatorbundle.csv does not decode as JSON ({e}); ignored"),
                        )
                        .in_bundle(&name);
                        None
                    }
                },
            };
            let mut objects = match bundle.as_deref().filter(|s| !s.trim().is_empty()) {
                None => Vec::new(),
                Some(text) => match split_objects(text) {
                    Ok(v) => v,
                    Err(e) => {
                        self.warn(
                            Rule::Parse,
                            format!(
                                "operatorbundle.bundle does not decode as a stream of JSON objects ({e}); no olm.bundle.object properties"
                            ),
                        )
                        .in_bundle(&name);
                        Vec::new()
                    }
                },
            };
            if objects.is_empty() {
                if let Some(c) = &csv_value {
                    objects.push(c.clone());
                }
            }
            // The CSV of record: the stored csv column, else the first CSV among the objects.
            let csv_value = csv_value.or_else(|| {
                objects
                    .iter()
                    .find(|o| {
                        o.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion")
                    })
                    .cloned()
            });
            let mut version = opt_string(version);
            if version.is_empty() {
                version = csv_value.as_ref().map(csv::version).unwrap_or_default();
            }
            let mut skip_range = opt_string(range);
            if skip_range.is_empty() {
                skip_range = csv_value.as_ref().map(csv::skip_range).unwrap_or_default();
            }
            out.entry(name).or_insert(BundleRow {
                csv: csv_value,
                objects,
                bundlepath: opt_string(path),
                version,
                skip_range,
                substitutes_for: opt_string(subst),
            });
        }
        if nameless > 0 {
            self.warn(
                Rule::Parse,
                format!(
                    "legacy quirk: {nameless} operatorbundle row(s) have no name (schema migration 5 inserted its version/skiprange backfill as new rows); ignored, versions are read from the CSVs instead"
                ),
            );
        }
        Ok(out)
    }

    pub(super) fn entry_rows(&mut self) -> Result<HashMap<(String, String), Vec<EntryRow>>> {
        let mut st = self.conn.prepare(
            "SELECT entry_id, package_name, channel_name, operatorbundle_name, replaces, depth \
             FROM channel_entry ORDER BY entry_id",
        )?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                text(r, 1)?,
                text(r, 2)?,
                text(r, 3)?,
                r.get::<_, Option<i64>>(4)?,
                r.get::<_, Option<i64>>(5)?,
            ))
        })?;
        let mut out: HashMap<(String, String), Vec<EntryRow>> = HashMap::new();
        for r in rows {
            let (id, pkg, ch, bundle, replaces, depth) = r?;
            out.entry((opt_string(pkg), opt_string(ch)))
                .or_default()
                .push(EntryRow {
                    id,
                    bundle: opt_string(bundle),
                    replaces,
                    depth: depth.unwrap_or(i64::MAX),
                });
        }
        Ok(out)
    }

    /// (package, channel) → stored head, in table order.
    pub(super) fn channel_rows(&mut self) -> Result<Vec<((String, String), String)>> {
        let mut st = self.conn.prepare(
            "SELECT package_name, name, head_operatorbundle_name FROM channel ORDER BY rowid",
        )?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    (opt_string(text(r, 0)?), opt_string(text(r, 1)?)),
                    opt_string(text(r, 2)?),
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    pub(super) fn package_rows(&mut self) -> Result<Vec<(String, String)>> {
        let mut st = self
            .conn
            .prepare("SELECT name, default_channel FROM package ORDER BY rowid")?;
        let rows = st
            .query_map([], |r| {
                Ok((opt_string(text(r, 0)?), opt_string(text(r, 1)?)))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    pub(super) fn deprecated_names(&mut self) -> Result<BTreeSet<String>> {
        if self.version < 12 {
            return Ok(BTreeSet::new());
        }
        let mut st = self
            .conn
            .prepare("SELECT operatorbundle_name FROM deprecated")?;
        let names = st
            .query_map([], |r| text(r, 0))?
            .filter_map(|r| r.transpose())
            .collect::<rusqlite::Result<_>>()?;
        Ok(names)
    }

    /// Rows of a `(type, value, operatorbundle_name …)` table for one bundle, in table order.
    pub(super) fn typed_rows(&self, table: &str, name: &str) -> Result<Vec<(String, String)>> {
        let mut st = self.conn.prepare_cached(&format!(
            "SELECT type, value FROM {table} WHERE operatorbundle_name = ?1 ORDER BY rowid"
        ))?;
        let rows = st
            .query_map([name], |r| {
                Ok((opt_string(text(r, 0)?), opt_string(text(r, 1)?)))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// GVK rows of `api_provider` / `api_requirer` for one bundle: keyed by bundle from schema
    /// 6 on, by channel entry before.
    pub(super) fn api_rows(&self, table: &str, name: &str) -> Result<Vec<Value>> {
        let sql = if self.version >= 6 {
            format!(
                "SELECT group_name, version, kind FROM {table} WHERE operatorbundle_name = ?1 ORDER BY rowid"
            )
        } else {
            format!(
                "SELECT a.group_name, a.version, a.kind FROM {table} a \
                 JOIN channel_entry e ON a.channel_entry_id = e.entry_id \
                 WHERE e.operatorbundle_name = ?1 ORDER BY a.rowid"
            )
        };
        let mut st = self.conn.prepare_cached(&sql)?;
        let rows = st
            .query_map([name], |r| {
                Ok(json!({
                    "group": opt_string(text(r, 0)?),
                    "version": opt_string(text(r, 1)?),
                    "kind": opt_string(text(r, 2)?),
                }))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    pub(super) fn related_images(
        &self,
        name: &str,
        csv: Option<&Value>,
    ) -> Result<Vec<RelatedImage>> {
        if self.version < 1 {
            return Ok(Vec::new());
        }
        let names: HashMap<&str, &str> = csv
            .and_then(|c| c.pointer("/spec/relatedImages"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| {
                Some((
                    r.get("image")?.as_str()?,
                    r.get("name").and_then(Value::as_str).unwrap_or(""),
                ))
            })
            .collect();
        let mut st = self.conn.prepare_cached(
            "SELECT image FROM related_image WHERE operatorbundle_name = ?1 ORDER BY rowid",
        )?;
        let images = st
            .query_map([name], |r| text(r, 0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut seen = HashSet::new();
        Ok(images
            .into_iter()
            .flatten()
            .filter(|i| !i.is_empty() && seen.insert(i.clone()))
            .map(|image| RelatedImage {
                name: names.get(image.as_str()).unwrap_or(&"").to_string(),
                image,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn splits_concatenated_objects() {
        let v = super::split_objects(r#"{"a":1}{"b":[2]}  {"c":{}}"#).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[1]["b"][0], 2);
    }
}
