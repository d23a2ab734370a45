//! Upstream SQLite index databases (schema 0–13) → declarations.
//!
//! This module owns reading the `index.db` files that upstream's `opm registry`/`opm index`
//! built, at any schema version from 0 to 13 (registry-semantics.md §4). The version comes from
//! `schema_migrations`; a SQLite file without that table, or with a version outside 0–13, is
//! refused. The file is opened read-only and immutable and is never modified.
//!
//! What comes back, per table:
//!
//! * `package` → packages and default channels; `channel` → channels (the stored head is
//!   cross-checked against the head FBC computes).
//! * `channel_entry` → channel entries. Upstream materialized a channel as a walk from its head
//!   (§4.3): the chain of `replaces` pointers reachable from the head entry is the replaces
//!   chain, and every other pointer belongs to the two-row pattern a skip produced (a row for
//!   the skipped name, and a duplicate of the skipper pointing at it). So a pointer from an
//!   entry on the head's chain is a `replaces`, and a pointer from any other entry is a `skips`
//!   item. Names with no `operatorbundle` row are synthetic skip targets, never entries.
//! * `operatorbundle` → bundles: `bundlepath` is the image, `version`/`skiprange` (from the CSV
//!   before schema 5, or when migration 5's backfill left them empty), `bundle` (concatenated
//!   JSON objects) → `olm.bundle.object` properties.
//! * `properties` (schema ≥ 9) → properties; before that `olm.package` is derived from the
//!   version and `olm.gvk` from `api_provider`. `dependencies` (≥ 8) and `api_requirer` (≥ 3) →
//!   `olm.gvk.required` / `olm.package.required`.
//! * `related_image` (≥ 1) → related images. `deprecated` (≥ 12) and `olm.deprecated`
//!   properties → an `olm.deprecations` entry per bundle.
//!
//! Legacy quirks that FBC cannot express are tolerated where a faithful FBC exists, with a
//! warning naming the quirk and the FBC rule it would break.

use super::Decl;
use crate::diag::{Diagnostic, Rule};
use crate::json;
use crate::model::*;
use anyhow::{bail, Context, Result};
use base64::Engine;
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

/// Tags a warning already pushed (the builder methods of [`Diagnostic`] take it by value).
trait Tag {
    fn in_package(&mut self, p: &str) -> &mut Self;
    fn in_channel(&mut self, c: &str) -> &mut Self;
    fn in_bundle(&mut self, b: &str) -> &mut Self;
}

impl Tag for Diagnostic {
    fn in_package(&mut self, p: &str) -> &mut Self {
        self.package = Some(p.to_string());
        self
    }
    fn in_channel(&mut self, c: &str) -> &mut Self {
        self.channel = Some(c.to_string());
        self
    }
    fn in_bundle(&mut self, b: &str) -> &mut Self {
        self.bundle = Some(b.to_string());
        self
    }
}

/// The newest schema version upstream ever wrote.
pub const MAX_SCHEMA_VERSION: i64 = 13;

/// Reads an upstream index into declarations; non-fatal quirks go to `warnings`.
pub fn read_index(path: &Path, warnings: &mut Vec<Diagnostic>) -> Result<Vec<Decl>> {
    let conn = open_read_only(path)?;
    let version = schema_version(&conn, path)?;
    check_tables(&conn, path, version)?;
    let origin = Origin::file(path.display().to_string());
    Reader {
        conn: &conn,
        version,
        origin,
        warnings,
    }
    .read()
}

/// The schema version recorded in `schema_migrations`, refusing files that are not indexes.
pub fn schema_version(conn: &Connection, path: &Path) -> Result<i64> {
    let not_index = || {
        format!(
            "{} is a SQLite database but not an operator-registry index: it has no \
             schema_migrations table (and it is not an opreg database either)",
            path.display()
        )
    };
    if !table_exists(conn, "schema_migrations")
        .with_context(|| format!("{} cannot be read as SQLite", path.display()))?
    {
        bail!(not_index());
    }
    let cols = columns(conn, "schema_migrations")?;
    if !cols.contains("version") {
        bail!(not_index());
    }
    let version: Option<i64> =
        conn.query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
            r.get(0)
        })?;
    let Some(version) = version else {
        bail!(
            "{}: schema_migrations is empty, so the index schema version is unknown",
            path.display()
        );
    };
    if cols.contains("dirty") {
        let dirty: bool = conn
            .query_row(
                "SELECT COALESCE(MAX(dirty), 0) FROM schema_migrations",
                [],
                |r| r.get(0),
            )
            .unwrap_or(false);
        if dirty {
            bail!(
                "{}: schema_migrations marks migration {version} as dirty (interrupted); the index is not usable",
                path.display()
            );
        }
    }
    if !(0..=MAX_SCHEMA_VERSION).contains(&version) {
        bail!(
            "{}: unknown index schema version {version}: opreg reads operator-registry indexes of schema 0 to {MAX_SCHEMA_VERSION}",
            path.display()
        );
    }
    Ok(version)
}

fn open_read_only(path: &Path) -> Result<Connection> {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("cannot open {}", path.display()))?;
    conn.execute_batch("PRAGMA query_only = ON;")?;
    Ok(conn)
}

fn table_exists(conn: &Connection, table: &str) -> Result<bool> {
    Ok(conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get::<_, i64>(0),
    )? > 0)
}

fn columns(conn: &Connection, table: &str) -> Result<HashSet<String>> {
    let mut st = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let cols = st
        .query_map([table], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(cols)
}

/// Tables (and `operatorbundle` columns) each schema version must have.
fn check_tables(conn: &Connection, path: &Path, version: i64) -> Result<()> {
    let mut tables = vec![
        "operatorbundle",
        "package",
        "channel",
        "channel_entry",
        "api",
        "api_provider",
    ];
    for (since, t) in [
        (1, "related_image"),
        (3, "api_requirer"),
        (8, "dependencies"),
        (9, "properties"),
        (12, "deprecated"),
    ] {
        if version >= since {
            tables.push(t);
        }
    }
    for t in tables {
        if !table_exists(conn, t)? {
            bail!(
                "{}: schema version {version} should have table {t:?}, but it is missing: not an operator-registry index, or a damaged one",
                path.display()
            );
        }
    }
    let cols = columns(conn, "operatorbundle")?;
    for (since, c) in [
        (0, "name"),
        (0, "csv"),
        (0, "bundle"),
        (2, "bundlepath"),
        (5, "skiprange"),
        (5, "version"),
        (7, "replaces"),
        (7, "skips"),
        (11, "substitutesfor"),
    ] {
        if version >= since && !cols.contains(c) {
            bail!(
                "{}: schema version {version} should have column operatorbundle.{c}, but it is missing",
                path.display()
            );
        }
    }
    Ok(())
}

struct BundleRow {
    csv: Option<Value>,
    objects: Vec<Value>,
    bundlepath: String,
    version: String,
    skip_range: String,
    substitutes_for: String,
}

struct EntryRow {
    id: i64,
    bundle: String,
    replaces: Option<i64>,
    depth: i64,
}

struct Reader<'a> {
    conn: &'a Connection,
    version: i64,
    origin: Origin,
    warnings: &'a mut Vec<Diagnostic>,
}

fn opt_string(v: Option<String>) -> String {
    v.unwrap_or_default()
}

/// A text column that Go may have written as TEXT or as BLOB (`[]byte`); NULL → `None`.
fn text(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    use rusqlite::types::ValueRef;
    Ok(match r.get_ref(i)? {
        ValueRef::Null => None,
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
    })
}

fn csv_version(csv: &Value) -> String {
    match csv.pointer("/spec/version") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn csv_skip_range(csv: &Value) -> String {
    csv.pointer("/metadata/annotations/olm.skipRange")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Splits a stream of concatenated JSON values (`operatorbundle.bundle`).
fn split_objects(text: &str) -> std::result::Result<Vec<Value>, serde_json::Error> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect()
}

fn gvk_value(v: &Value) -> Value {
    let f = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    json!({"group": f("group"), "kind": f("kind"), "version": f("version")})
}

fn prop(ty: &str, v: &Value) -> Property {
    Property {
        r#type: ty.to_string(),
        value: json::canonical(v),
    }
}

impl Reader<'_> {
    fn warn(&mut self, rule: Rule, msg: String) -> &mut Diagnostic {
        self.warnings
            .push(Diagnostic::warning(rule, msg).at(&self.origin));
        self.warnings.last_mut().expect("just pushed")
    }

    fn read(mut self) -> Result<Vec<Decl>> {
        let bundles = self.bundle_rows()?;
        let entries = self.entry_rows()?;
        let heads = self.channel_rows()?;
        let packages = self.package_rows()?;
        let deprecated = self.deprecated_names()?;

        // Channels, grouped by package, in table order.
        let mut channels_of: BTreeMap<String, Vec<Channel>> = BTreeMap::new();
        let mut bundle_packages: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for ((pkg, ch), head) in &heads {
            let rows = entries
                .get(&(pkg.clone(), ch.clone()))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            if rows.is_empty() {
                self.warn(
                    Rule::Empty,
                    "legacy quirk: channel has no channel_entry rows (its walk was truncated); \
                     left out, since FBC rule \"empty\" requires a channel to hold a bundle"
                        .into(),
                )
                .in_package(pkg)
                .in_channel(ch);
                continue;
            }
            let channel = self.channel_from_entries(pkg, ch, head, rows, &bundles);
            for e in &channel.entries {
                bundle_packages
                    .entry(e.name.clone())
                    .or_default()
                    .insert(pkg.clone());
            }
            channels_of.entry(pkg.clone()).or_default().push(channel);
        }

        let mut decls = Vec::new();
        let mut emitted: HashSet<String> = HashSet::new();
        for (pkg, default_channel) in &packages {
            let Some(chans) = channels_of.remove(pkg) else {
                self.warn(
                    Rule::Empty,
                    "legacy quirk: package has no channels in the index (upstream still listed \
                     it); left out, since FBC rule \"empty\" requires a channel"
                        .into(),
                )
                .in_package(pkg);
                continue;
            };
            let mut default = default_channel.clone();
            if default.is_empty() && chans.len() == 1 {
                default = chans[0].name.clone();
                self.warn(
                    Rule::DefaultChannel,
                    format!(
                        "legacy quirk: package.default_channel is empty; using the only channel {default:?}"
                    ),
                )
                .in_package(pkg);
            }
            let head_csv = chans
                .iter()
                .find(|c| c.name == default)
                .and_then(|c| {
                    heads
                        .iter()
                        .find(|((p, n), _)| p == pkg && *n == c.name)
                        .map(|(_, h)| h)
                })
                .and_then(|h| bundles.get(h))
                .and_then(|b| b.csv.as_ref());
            decls.push(Decl::Package(package_decl(
                pkg,
                &default,
                head_csv,
                self.origin.clone(),
            )));
            let mut members: BTreeSet<String> = BTreeSet::new();
            for c in &chans {
                members.extend(c.entries.iter().map(|e| e.name.clone()));
            }
            decls.extend(chans.into_iter().map(|c| Decl::Channel(pkg.clone(), c)));
            let mut deprecations = Vec::new();
            for name in &members {
                let Some(row) = bundles.get(name) else {
                    continue;
                };
                let (bundle, is_deprecated) = self.bundle_decl(pkg, name, row)?;
                if is_deprecated || deprecated.contains(name) {
                    deprecations.push(DeprecationEntry {
                        schema: schema::BUNDLE.to_string(),
                        name: name.clone(),
                        message: format!(
                            "{name} is deprecated (marked deprecated in the legacy SQLite index)"
                        ),
                    });
                }
                emitted.insert(name.clone());
                decls.push(Decl::Bundle(bundle));
            }
            if !deprecations.is_empty() {
                decls.push(Decl::Deprecations(
                    pkg.clone(),
                    Deprecations {
                        entries: deprecations,
                        origin: self.origin.clone(),
                    },
                ));
            }
        }
        for (pkg, _) in channels_of {
            self.warn(
                Rule::UnknownPackage,
                "legacy quirk: channel rows name a package with no package row; left out".into(),
            )
            .in_package(&pkg);
        }
        for (name, pkgs) in &bundle_packages {
            if pkgs.len() > 1 {
                self.warn(
                    Rule::Duplicate,
                    format!(
                        "legacy quirk: bundle is a channel entry in several packages ({}); it is emitted once per package",
                        pkgs.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                )
                .in_bundle(name);
            }
        }
        for name in bundles.keys() {
            if !emitted.contains(name) {
                let d = deprecated.contains(name);
                self.warn(
                    Rule::Membership,
                    format!(
                        "bundle has no channel entry in the index (stranded{}); left out, since FBC rule \"membership\" requires every bundle to be in a channel",
                        if d { ", deprecated" } else { "" }
                    ),
                )
                .in_bundle(name);
            }
        }
        Ok(decls)
    }

    /// `operatorbundle` rows by name, with version and skipRange filled from the CSV where the
    /// columns are absent (schema < 5) or empty.
    fn bundle_rows(&mut self) -> Result<BTreeMap<String, BundleRow>> {
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
                version = csv_value.as_ref().map(csv_version).unwrap_or_default();
            }
            let mut skip_range = opt_string(range);
            if skip_range.is_empty() {
                skip_range = csv_value.as_ref().map(csv_skip_range).unwrap_or_default();
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

    fn entry_rows(&mut self) -> Result<HashMap<(String, String), Vec<EntryRow>>> {
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
    fn channel_rows(&mut self) -> Result<Vec<((String, String), String)>> {
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

    fn package_rows(&mut self) -> Result<Vec<(String, String)>> {
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

    fn deprecated_names(&mut self) -> Result<BTreeSet<String>> {
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

    /// Reads a channel's materialized walk back into entries (see the module docs).
    fn channel_from_entries(
        &mut self,
        pkg: &str,
        ch: &str,
        stored_head: &str,
        rows: &[EntryRow],
        bundles: &BTreeMap<String, BundleRow>,
    ) -> Channel {
        let by_id: HashMap<i64, &EntryRow> = rows.iter().map(|r| (r.id, r)).collect();
        // The head entry: the stored head at its smallest depth, else the shallowest entry.
        let head_row = rows
            .iter()
            .filter(|r| r.bundle == stored_head)
            .min_by_key(|r| (r.depth, r.id))
            .or_else(|| rows.iter().min_by_key(|r| (r.depth, r.id)))
            .expect("rows is not empty");
        if head_row.bundle != stored_head {
            self.warn(
                Rule::ChannelHead,
                format!(
                    "legacy quirk: stored head {stored_head:?} has no channel entry; the walk is read from {:?}",
                    head_row.bundle
                ),
            )
            .in_package(pkg)
            .in_channel(ch);
        }
        // The replaces chain: entries reachable from the head entry.
        let mut chain: HashSet<i64> = HashSet::new();
        let mut cur = Some(head_row);
        while let Some(r) = cur {
            if !chain.insert(r.id) {
                break;
            }
            cur = r.replaces.and_then(|t| by_id.get(&t).copied());
        }
        // Bundle names in walk order (depth, then id): real bundles become entries.
        let mut order: Vec<&EntryRow> = rows.iter().collect();
        order.sort_by_key(|r| (r.depth, r.id));
        let mut entries: Vec<ChannelEntry> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for r in &order {
            if r.bundle.is_empty() {
                continue;
            }
            // A name with no operatorbundle row is a synthetic skip target: an edge end only.
            if let Some(b) = bundles.get(&r.bundle) {
                if !index.contains_key(r.bundle.as_str()) {
                    index.insert(&r.bundle, entries.len());
                    entries.push(ChannelEntry {
                        name: r.bundle.clone(),
                        skip_range: b.skip_range.clone(),
                        ..Default::default()
                    });
                }
            }
        }
        // Pointers: from the chain → replaces; from anywhere else → skips.
        for r in rows.iter().filter(|r| !r.bundle.is_empty()) {
            let Some(t) = r.replaces else { continue };
            let Some(target) = by_id.get(&t) else {
                self.warn(
                    Rule::Parse,
                    format!(
                        "legacy quirk: channel_entry {} of {:?} points at missing entry {t}; pointer ignored",
                        r.id, r.bundle
                    ),
                )
                .in_package(pkg)
                .in_channel(ch);
                continue;
            };
            if target.bundle.is_empty() {
                continue;
            }
            let Some(&i) = index.get(r.bundle.as_str()) else {
                // A synthetic name pointing somewhere: not expressible, and never written by
                // upstream's walks.
                self.warn(
                    Rule::Membership,
                    format!(
                        "legacy quirk: synthetic entry {:?} points at {:?}; FBC has no entry to carry that edge, dropped",
                        r.bundle, target.bundle
                    ),
                )
                .in_package(pkg)
                .in_channel(ch);
                continue;
            };
            let e = &mut entries[i];
            if chain.contains(&r.id) {
                if !e.replaces.is_empty() && e.replaces != target.bundle {
                    self.warn(
                        Rule::Cycle,
                        format!(
                            "legacy quirk: {:?} replaces both {:?} and {:?} on the chain; keeping the first",
                            e.name, e.replaces, target.bundle
                        ),
                    )
                    .in_package(pkg)
                    .in_channel(ch);
                } else {
                    e.replaces = target.bundle.clone();
                }
            } else if !e.skips.contains(&target.bundle) {
                e.skips.push(target.bundle.clone());
            }
        }
        // The head FBC computes must be the head upstream stored.
        let probe = Channel {
            name: ch.to_string(),
            entries: entries.clone(),
            ..Default::default()
        };
        if let crate::graph::Head::One(h) = crate::graph::channel_head(&probe) {
            if h != stored_head {
                self.warn(
                    Rule::ChannelHead,
                    format!(
                        "legacy quirk: the index stores head {stored_head:?}, but the entries read back make {h:?} the head"
                    ),
                )
                .in_package(pkg)
                .in_channel(ch);
            }
        }
        Channel {
            name: ch.to_string(),
            entries,
            properties: Vec::new(),
            origin: self.origin.clone(),
        }
    }

    /// Rows of a `(type, value, operatorbundle_name …)` table for one bundle, in table order.
    fn typed_rows(&self, table: &str, name: &str) -> Result<Vec<(String, String)>> {
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
    fn api_rows(&self, table: &str, name: &str) -> Result<Vec<Value>> {
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

    fn related_images(&self, name: &str, csv: Option<&Value>) -> Result<Vec<RelatedImage>> {
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

    /// One bundle of one package; also whether an `olm.deprecated` property marked it.
    fn bundle_decl(&mut self, pkg: &str, name: &str, row: &BundleRow) -> Result<(Bundle, bool)> {
        let mut props: Vec<Property> = Vec::new();
        let mut package_props: Vec<Value> = Vec::new();
        let mut deprecated = false;
        if self.version >= 9 {
            for (ty, value) in self.typed_rows("properties", name)? {
                let v: Value = match serde_json::from_str(&value) {
                    Ok(v) => v,
                    Err(e) => {
                        self.warn(
                            Rule::Property,
                            format!("property of type {ty:?} is not JSON ({e}); dropped"),
                        )
                        .in_package(pkg)
                        .in_bundle(name);
                        continue;
                    }
                };
                match ty.as_str() {
                    "olm.deprecated" => deprecated = true,
                    prop::PACKAGE => {
                        let named = v.get("packageName").and_then(Value::as_str).unwrap_or("");
                        if named == pkg {
                            package_props.push(v);
                        }
                    }
                    prop::GVK => props.push(prop(prop::GVK, &gvk_value(&v))),
                    "" => {}
                    _ => props.push(prop(&ty, &v)),
                }
            }
        }
        for g in self.api_rows("api_provider", name)? {
            props.push(prop(prop::GVK, &g));
        }
        if self.version >= 3 {
            for g in self.api_rows("api_requirer", name)? {
                props.push(prop(prop::GVK_REQUIRED, &g));
            }
        }
        if self.version >= 8 {
            for (ty, value) in self.typed_rows("dependencies", name)? {
                let v: Value = match serde_json::from_str(&value) {
                    Ok(v) => v,
                    Err(e) => {
                        self.warn(
                            Rule::Property,
                            format!("dependency of type {ty:?} is not JSON ({e}); dropped"),
                        )
                        .in_package(pkg)
                        .in_bundle(name);
                        continue;
                    }
                };
                match ty.as_str() {
                    "olm.gvk" => props.push(prop(prop::GVK_REQUIRED, &gvk_value(&v))),
                    "olm.package" => {
                        let f = |k: &str| v.get(k).cloned().unwrap_or(Value::String(String::new()));
                        props.push(prop(
                            prop::PACKAGE_REQUIRED,
                            &json!({"packageName": f("packageName"), "versionRange": f("version")}),
                        ));
                    }
                    prop::CONSTRAINT => props.push(prop(prop::CONSTRAINT, &v)),
                    other => {
                        self.warn(
                            Rule::Property,
                            format!(
                                "legacy quirk: dependency of type {other:?} has no FBC property (FBC knows olm.gvk.required, olm.package.required and olm.constraint); dropped"
                            ),
                        )
                        .in_package(pkg)
                        .in_bundle(name);
                    }
                }
            }
        }
        // Exactly one olm.package, agreeing with the version of record.
        let package_value = match package_props.len() {
            0 => json!({"packageName": pkg, "version": row.version}),
            1 => package_props.remove(0),
            n => {
                let pick = package_props
                    .iter()
                    .position(|v| v.get("version").and_then(Value::as_str) == Some(&row.version))
                    .unwrap_or(0);
                self.warn(
                    Rule::PackageProperty,
                    format!(
                        "legacy quirk: {n} different olm.package properties; FBC rule \"package-property\" allows one, keeping the one with version {:?}",
                        package_props[pick].get("version").and_then(Value::as_str).unwrap_or("")
                    ),
                )
                .in_package(pkg)
                .in_bundle(name);
                package_props.swap_remove(pick)
            }
        };
        let mut package_value = package_value;
        let stored = package_value
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("");
        if stored.is_empty() && !row.version.is_empty() {
            self.warn(
                Rule::PackageProperty,
                format!(
                    "legacy quirk: the olm.package property has no version (migration 5 wrote its backfill into nameless rows, and migration 9 copied the empty column); using the CSV's version {:?}",
                    row.version
                ),
            )
            .in_package(pkg)
            .in_bundle(name);
            package_value["version"] = Value::String(row.version.clone());
        }
        let version = package_value
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if version.is_empty() {
            self.warn(
                Rule::PackageProperty,
                format!(
                    "legacy quirk: the index holds no version for this bundle (schema {} {}), so FBC rule \"package-property\" (a semver version) will fail",
                    self.version,
                    if self.version < 5 { "has no version column and no CSV is stored" } else { "stores an empty version" }
                ),
            )
            .in_package(pkg)
            .in_bundle(name);
        }
        props.push(prop(prop::PACKAGE, &package_value));
        for o in &row.objects {
            let data = base64::engine::general_purpose::STANDARD.encode(json::canonical(o));
            props.push(prop(prop::BUNDLE_OBJECT, &json!({ "data": data })));
        }
        props.sort();
        props.dedup();
        if row.bundlepath.is_empty() && row.objects.is_empty() {
            self.warn(
                Rule::Image,
                "legacy quirk: the bundle has neither a bundlepath nor stored manifests, so FBC rule \"image\" will fail".into(),
            )
            .in_package(pkg)
            .in_bundle(name);
        }
        if !row.substitutes_for.is_empty()
            && !props.iter().any(|p| p.r#type == "olm.substitutesFor")
        {
            self.warn(
                Rule::Property,
                format!(
                    "legacy quirk: substitutesfor {:?} has no FBC field; dropped",
                    row.substitutes_for
                ),
            )
            .in_package(pkg)
            .in_bundle(name);
        }
        let related_images = self.related_images(name, row.csv.as_ref())?;
        Ok((
            Bundle {
                name: name.to_string(),
                package: pkg.to_string(),
                image: row.bundlepath.clone(),
                properties: props,
                related_images,
                origin: self.origin.clone(),
                spilled: false,
            },
            deprecated,
        ))
    }
}

/// Package-level fields taken from the default channel head's CSV.
fn package_decl(name: &str, default: &str, csv: Option<&Value>, origin: Origin) -> Package {
    let s = |p: &str| {
        csv.and_then(|c| c.pointer(p))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let icon = Some(Icon {
        base64data: s("/spec/icon/0/base64data"),
        mediatype: s("/spec/icon/0/mediatype"),
    })
    .filter(|i| !i.base64data.is_empty());
    Package {
        name: name.to_string(),
        default_channel: default.to_string(),
        icon,
        description: s("/spec/description"),
        origin,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_concatenated_objects() {
        let v = split_objects(r#"{"a":1}{"b":[2]}  {"c":{}}"#).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[1]["b"][0], 2);
    }

    #[test]
    fn gvk_values_drop_extra_keys() {
        let v = gvk_value(&json!({"type": "olm.gvk", "group": "g", "kind": "K", "version": "v1"}));
        assert_eq!(
            json::canonical(&v),
            r#"{"group":"g","kind":"K","version":"v1"}"#
        );
    }
}
