//! Upstream SQLite index databases (schema 0–13) → declarations.
//!
//! This module owns reading the `index.db` files that upstream's `opm registry`/`opm index`
//! built, at any schema version from 0 to 13. The version comes from
//! `schema_migrations`; a SQLite file without that table, or with a version outside 0–13, is
//! refused. The file is opened read-only and immutable and is never modified.
//!
//! What comes back, per table:
//!
//! * `package` → packages and default channels; `channel` → channels (the stored head is
//!   cross-checked against the head FBC computes).
//! * `channel_entry` → channel entries. Upstream materialized a channel as a walk from its head
//!   (the walk from the head, one row per step): the chain of `replaces` pointers reachable from the head entry is the replaces
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
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | opening the file read-only and assembling declarations |
//! | [`schema`] | the schema version (0–13) and the tables and columns each must have |
//! | [`rows`] | each table read once, TEXT-or-BLOB columns decoded alike |
//! | [`channels`] | channels rebuilt from the materialized walks: replaces chain and skips |
//! | [`bundles`] | one bundle from its rows: properties, dependencies, related images, deprecation |

mod bundles;
mod channels;
mod rows;
mod schema;

pub use schema::{schema_version, MAX_SCHEMA_VERSION};

use super::Decl;
use crate::catalog::csv;
use crate::diag::{Diagnostic, Rule};
use crate::model::*;
use anyhow::Result;
use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

/// Tags a warning already pushed (the builder methods of [`Diagnostic`] take it by value).
pub(super) trait Tag {
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

/// Reads an upstream index into declarations; non-fatal quirks go to `warnings`.
pub fn read_index(path: &Path, warnings: &mut Vec<Diagnostic>) -> Result<Vec<Decl>> {
    let conn = crate::sqlite::open_checked(path)?;
    let version = schema_version(&conn, path)?;
    schema::check_tables(&conn, path, version)?;
    let origin = Origin::file(path.display().to_string());
    Reader {
        conn: &conn,
        version,
        origin,
        warnings,
    }
    .read()
}

pub(super) struct Reader<'a> {
    pub(super) conn: &'a Connection,
    pub(super) version: i64,
    pub(super) origin: Origin,
    pub(super) warnings: &'a mut Vec<Diagnostic>,
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
            decls.push(Decl::Package(csv::package(
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
                        schema: crate::model::schema::BUNDLE.to_string(),
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
}
