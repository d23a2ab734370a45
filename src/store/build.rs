//! Writing a validated catalog: a temp file beside the output, filled (bundles possibly while
//! the catalog is still being read), synced and renamed into place; temp files of killed
//! ingests are cleaned up.

use super::answers;
use super::batch::{insert_rows, BundleRows};
use super::{FORMAT_KEY, FORMAT_VALUE, SCHEMA, SCHEMA_VERSION};
use crate::api;
use crate::graph;
use crate::model::*;
use crate::validate::ValidCatalog;
use anyhow::{bail, Context, Result};
use prost::Message;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// Writes a validated catalog to `output` atomically: a temp file in the same directory is
/// filled, synced and renamed over `output`. On any error `output` is left as it was.
/// `progress(done, total)` is called as packages are written.
pub fn write_catalog(
    cat: &ValidCatalog,
    output: &Path,
    source_digest: &str,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<()> {
    Builder::create(output)?.finish(cat, source_digest, progress)
}

/// A database being built: a temp file beside the output with the schema applied and one
/// transaction open. Bundles can be added while the catalog is still being read (a streaming
/// ingest hands each one over as it is parsed and keeps only a light copy); [`Builder::finish`]
/// writes the rest from the validated catalog and moves the file into place. Dropping a
/// builder deletes its temp file, so nothing is ever left under the output's name.
pub struct Builder {
    tmp: crate::atomic::File,
    output: PathBuf,
    dir: PathBuf,
    conn: Connection,
    /// (package, name) of every bundle row written so far.
    added: std::collections::HashSet<(String, String)>,
    /// Bundle rows not yet written, and the package_csv ids given out.
    pending: BundleRows,
    /// Whether [`BUNDLE_TABLES`] were analyzed after the last bundle was added.
    bundles_analyzed: bool,
    /// The `CREATE INDEX` statements of the secondary indexes dropped while the tables
    /// [`Builder::finish`] fills are written; run again, once, before the commit.
    deferred_indexes: Vec<String>,
}

/// The tables only [`add_bundle_rows`] writes (and `fill`'s deprecations update, in no indexed
/// column): see [`Builder::analyze_bundle_tables`].
const BUNDLE_TABLES: [&str; 4] = ["bundle", "bundle_property", "related_image", "provided_api"];

/// Tables whose statistics come from a sample of [`ANALYSIS_LIMIT`] rows per index: a full
/// ANALYZE of them took about 7 % of the community catalog's ingest (edge has 62,000 rows).
/// Checked with EXPLAIN QUERY PLAN on the server's queries of these tables, on the community,
/// certified, 16x and 64x synthetic catalogs: the plans stay as they were with full statistics,
/// provided `channel_entry` and the index in [`FULLY_ANALYZED_INDEXES`] are analyzed in
/// full (sampled, each changed a plan: `channel_entry` rows found through its stream index
/// instead of its primary key).
const SAMPLED_TABLES: [&str; 5] = [
    "edge",
    "bundle",
    "bundle_property",
    "related_image",
    "provided_api",
];

/// Indexes of [`SAMPLED_TABLES`] analyzed in full all the same.
const FULLY_ANALYZED_INDEXES: [&str; 1] = ["edge_to"];

/// Rows per index that a sampled ANALYZE visits (SQLite's `analysis_limit`).
const ANALYSIS_LIMIT: u32 = 1000;

/// Gathers the query planner's statistics of `table` (see [`SAMPLED_TABLES`]).
fn analyze(conn: &Connection, table: &str) -> Result<()> {
    let quoted = format!("\"{}\"", table.replace('"', "\"\""));
    if !SAMPLED_TABLES.contains(&table) {
        conn.execute_batch(&format!("ANALYZE {quoted}"))?;
        return Ok(());
    }
    conn.execute_batch(&format!(
        "PRAGMA analysis_limit = {ANALYSIS_LIMIT}; ANALYZE {quoted}; PRAGMA analysis_limit = 0;"
    ))?;
    let full: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?1")?
        .query_map([table], |r| r.get::<_, String>(0))?
        .filter(|n| matches!(n, Ok(n) if FULLY_ANALYZED_INDEXES.contains(&n.as_str())))
        .collect::<rusqlite::Result<_>>()?;
    for index in full {
        conn.execute_batch(&format!("ANALYZE \"{index}\""))?;
    }
    Ok(())
}

/// Tables whose secondary indexes are built once, after their rows are in, instead of being
/// updated row by row: an index built from sorted rows is written append-only, where tens of
/// thousands of inserts at random places spill and re-read pages of the cache.
const DEFERRED_INDEX_TABLES: &str = "'edge', 'channel_entry'";

/// Fails at once when `output` cannot take a database: it is a directory, a device, a FIFO or
/// anything else that is not a regular file, or its directory does not exist. Called before
/// any work, so a long ingest never ends on that error. A symbolic link is followed: the file
/// it points to is the one replaced.
pub fn check_output(output: &Path) -> Result<()> {
    let target = output_target(output)?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => bail!(
            "cannot write the database to {}: it is a directory; name a file, such as {}",
            output.display(),
            output.join("catalog.db").display()
        ),
        Ok(m) if !m.is_file() => bail!(
            "cannot write the database to {}: it exists and is not a regular file (a device, FIFO or socket); name a file",
            output.display()
        ),
        _ => {}
    }
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() && !d.is_dir() => bail!(
            "cannot write the database to {}: directory {} does not exist",
            output.display(),
            d.display()
        ),
        _ => Ok(()),
    }
}

/// The file a database written to `output` replaces: `output`, or where its chain of symbolic
/// links ends.
fn output_target(output: &Path) -> Result<PathBuf> {
    let mut path = output.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&path)
                    .with_context(|| format!("cannot read the link {}", path.display()))?;
                path = match path.parent() {
                    Some(d) if link.is_relative() => d.join(link),
                    _ => link,
                };
            }
            _ => return Ok(path),
        }
    }
    bail!(
        "cannot write the database to {}: too many levels of symbolic links",
        output.display()
    )
}

impl Builder {
    pub fn create(output: &Path) -> Result<Builder> {
        check_output(output)?;
        let output = &output_target(output)?;
        let dir = match output.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // A database is created like any file (0666 less the umask: 0644 under 022), not
        // private, so that another user's `opreg serve` can read it.
        let opts = crate::atomic::Options::mode(crate::atomic::Mode::Create(0o666))
            .named(".opreg-ingest-", ".db.tmp")
            .temp_dir(&dir);
        let tmp = crate::atomic::File::create(output, &opts)
            .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
        // Held until the builder is gone: marks the file as belonging to a live ingest
        // (remove_stale_temp_files).
        tmp.file()
            .try_lock()
            .with_context(|| format!("cannot lock {}", tmp.path().display()))?;
        let conn = Connection::open(tmp.path())?;
        // Bundles may arrive before their package: the catalog's consistency is checked by
        // validation, not by foreign keys.
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF;",
        )?;
        conn.execute_batch(SCHEMA).context("creating the schema")?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        let deferred_indexes = drop_secondary_indexes(&conn)?;
        conn.execute_batch("BEGIN")?;
        Ok(Builder {
            tmp,
            output: output.to_path_buf(),
            dir,
            conn,
            added: Default::default(),
            pending: Default::default(),
            bundles_analyzed: false,
            deferred_indexes,
        })
    }

    /// The temporary file the database is built in, until it is moved into place.
    pub fn temp_path(&self) -> &Path {
        self.tmp.path()
    }

    /// Writes one bundle's rows: the bundle with its wire form (without deprecation, which
    /// [`Builder::finish`] adds), properties, related images and provided APIs. A second bundle
    /// with the same package and name is ignored here; validation reports it.
    pub fn add_bundle(&mut self, b: &Bundle) -> Result<()> {
        add_bundle_rows(&self.conn, b, None, &mut self.pending)?;
        self.added.insert((b.package.clone(), b.name.clone()));
        self.bundles_analyzed = false;
        Ok(())
    }

    /// Writes the bundles' last rows and gathers the query planner's statistics of
    /// [`BUNDLE_TABLES`] now, on the thread that added them (a streaming ingest calls this
    /// while the catalog is still being validated), so [`Builder::finish`] analyzes only the
    /// rest, unless it writes bundles itself.
    pub fn analyze_bundle_tables(&mut self) -> Result<()> {
        self.pending.write(&self.conn, true)?;
        for t in BUNDLE_TABLES {
            analyze(&self.conn, t)?;
        }
        self.bundles_analyzed = true;
        Ok(())
    }

    /// Records an extra `catalog_info` entry (for example the images a catalog came from).
    pub fn set_info(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO catalog_info (key, value) VALUES (?1, ?2)",
            [key, value],
        )?;
        Ok(())
    }

    /// Writes everything else from the validated catalog, commits, syncs and renames the file
    /// over the output.
    pub fn finish(
        self,
        cat: &ValidCatalog,
        digest: &str,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<()> {
        let Builder {
            tmp,
            output,
            dir,
            conn,
            added,
            mut pending,
            bundles_analyzed,
            deferred_indexes,
        } = self;
        // Statistics gathered early stay right if `fill` writes no bundle (deprecations it
        // sets change no indexed column).
        let analyze_bundles = !bundles_analyzed
            || cat
                .packages
                .values()
                .flat_map(|p| p.bundles.values())
                .any(|b| !added.contains(&(b.package.clone(), b.name.clone())));
        // Most of the file is written by now: the kernel flushes it while the rest is
        // written, so the final sync waits only for what came after.
        let early_sync = tmp.file().try_clone().ok().map(|f| {
            std::thread::spawn(move || {
                let _ = f.sync_data();
            })
        });
        fill(&conn, cat, &added, &mut pending, digest, progress)?;
        for sql in &deferred_indexes {
            conn.execute_batch(sql)?;
        }
        conn.execute_batch("COMMIT")?;
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for t in tables
            .iter()
            .filter(|t| analyze_bundles || !BUNDLE_TABLES.contains(&t.as_str()))
        {
            analyze(&conn, t)?;
        }
        // Keep sqlite_stat1 (row counts) but not the per-value samples: with sqlite_stat4 present
        // SQLite re-prepares every statement whose bound value meets an indexed column, which
        // was a fifth of the server's CPU on bundle lookups.
        let stat4: bool = conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_schema WHERE name = 'sqlite_stat4'",
            [],
            |r| r.get(0),
        )?;
        if stat4 {
            conn.execute_batch("DELETE FROM sqlite_stat4;")?;
        }
        conn.close().map_err(|(_, e)| e)?;
        // Replacing a database keeps its mode, as rewriting a file in place would.
        if let Ok(old) = std::fs::metadata(&output) {
            let _ = tmp.file().set_permissions(old.permissions());
        }
        if let Some(t) = early_sync {
            let _ = t.join();
        }
        // Synced, renamed over the output, the directory synced.
        tmp.commit().with_context(|| {
            format!(
                "cannot move the new database into place at {}",
                output.display()
            )
        })?;
        remove_stale_temp_files(&dir);
        Ok(())
    }
}

/// Drops the secondary indexes of [`DEFERRED_INDEX_TABLES`] from a new, empty database and
/// returns their `CREATE INDEX` statements, as the migrations wrote them, to be run again
/// when the rows are in: the schema ends up the same.
fn drop_secondary_indexes(conn: &Connection) -> Result<Vec<String>> {
    let found: Vec<(String, String)> = conn
        .prepare(&format!(
            "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL
             AND tbl_name IN ({DEFERRED_INDEX_TABLES}) ORDER BY rowid"
        ))?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (name, _) in &found {
        conn.execute_batch(&format!("DROP INDEX \"{}\"", name.replace('"', "\"\"")))?;
    }
    Ok(found.into_iter().map(|(_, sql)| sql).collect())
}

/// Deletes the temp files that killed ingests left in `dir`. A live builder holds an exclusive
/// lock on its temp file, so one whose lock can be taken, and that nobody has written for a
/// minute, belongs to no running ingest.
fn remove_stale_temp_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(".opreg-ingest-") && name.ends_with(".db.tmp")) {
            continue;
        }
        let idle = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|d| d > std::time::Duration::from_secs(60));
        if !idle {
            continue;
        }
        let Ok(f) = std::fs::File::open(e.path()) else {
            continue;
        };
        if f.try_lock().is_ok() {
            tracing::info!(file = %e.path().display(), "removed a temp file left by an interrupted ingest");
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn add_bundle_rows(
    conn: &Connection,
    b: &Bundle,
    deprecation: Option<&str>,
    pending: &mut BundleRows,
) -> Result<()> {
    let wire = crate::wire::to_wire(b, deprecation);
    let template = wire.csv_synth.then(|| {
        crate::wire::csv_template(&crate::wire::CsvInputs {
            bundle_name: &b.name,
            version: &b.version(),
            related_images: &b.related_images,
            metadata: b
                .properties
                .iter()
                .find(|p| p.r#type == prop::CSV_METADATA)
                .map_or("", |p| p.value.as_str()),
        })
    });
    // The package's row, keyed for the join; its parts are written with the package (fill).
    let parts: Option<i64> = match template {
        Some(_) => match pending.csv_ids.get(&b.package) {
            Some(id) => Some(*id),
            None => {
                let id = conn
                    .prepare_cached(
                        "INSERT INTO package_csv (package) VALUES (?1)
                 ON CONFLICT (package) DO UPDATE SET package = excluded.package RETURNING id",
                    )?
                    .query_row([&b.package], |r| r.get(0))?;
                pending.csv_ids.insert(b.package.clone(), id);
                Some(id)
            }
        },
        None => None,
    };
    let n = conn
        .prepare_cached("INSERT OR IGNORE INTO bundle (package, name, version, image, deprecation, wire_core, wire_manifests, csv_template, csv_parts) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")?
        .execute(params![
            b.package,
            b.name,
            b.version(),
            b.image,
            deprecation,
            wire.core.encode_to_vec(),
            wire.manifests.encode_to_vec(),
            template,
            parts,
        ])?;
    if n == 0 {
        return Ok(());
    }
    let id = conn.last_insert_rowid();
    for (seq, p) in b.properties.iter().enumerate() {
        pending
            .props
            .push((id, seq as i64, p.r#type.clone(), p.value.clone()));
    }
    for g in b.gvks(prop::GVK) {
        pending.apis.push((g.group, g.version, g.kind, id));
    }
    pending.write(conn, false)?;
    let mut ins_img = conn.prepare_cached(
        "INSERT INTO related_image (bundle_id, seq, name, image) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (seq, r) in b.related_images.iter().enumerate() {
        ins_img.execute(params![id, seq as i64, r.name, r.image])?;
    }
    Ok(())
}

/// Sets the deprecation of a bundle written before its package's deprecations were known.
fn set_bundle_deprecation(conn: &Connection, package: &str, name: &str, msg: &str) -> Result<()> {
    let core: Option<Vec<u8>> = conn
        .prepare_cached("SELECT wire_core FROM bundle WHERE package = ?1 AND name = ?2")?
        .query_row([package, name], |r| r.get(0))
        .optional()?;
    let Some(core) = core else {
        return Ok(());
    };
    let mut b = api::Bundle::decode(core.as_slice())?;
    b.deprecation = Some(api::Deprecation {
        message: msg.to_string(),
    });
    conn.prepare_cached(
        "UPDATE bundle SET deprecation = ?3, wire_core = ?4 WHERE package = ?1 AND name = ?2",
    )?
    .execute(params![package, name, msg, b.encode_to_vec()])?;
    Ok(())
}

fn fill(
    conn: &Connection,
    cat: &Catalog,
    added: &std::collections::HashSet<(String, String)>,
    pending: &mut BundleRows,
    digest: &str,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<()> {
    let tx = conn;
    {
        let mut info = tx.prepare("INSERT INTO catalog_info (key, value) VALUES (?1, ?2)")?;
        info.execute([FORMAT_KEY, FORMAT_VALUE])?;
        info.execute(["opreg_version", env!("CARGO_PKG_VERSION")])?;
        info.execute(["source_digest", digest])?;
        info.execute(["packages", &cat.packages.len().to_string()])?;
        info.execute(["bundles", &cat.bundle_count().to_string()])?;
        info.execute(["entries", &cat.entry_count().to_string()])?;

        let mut ins_pkg = tx.prepare("INSERT INTO package (name, default_channel, description, icon_data, icon_mediatype, properties, deprecation) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?;
        // Bundles may be written before or after their package (streaming or not).
        let mut set_csv = tx.prepare(
            "INSERT INTO package_csv (package, description, icon) VALUES (?1, ?2, ?3)
             ON CONFLICT (package) DO UPDATE SET description = excluded.description, icon = excluded.icon",
        )?;
        let mut ins_ch = tx.prepare("INSERT INTO channel (package, name, head, properties, deprecation) VALUES (?1, ?2, ?3, ?4, ?5)")?;
        let mut ins_entry = tx.prepare("INSERT INTO channel_entry (package, channel, bundle, seq, position, replaces, skips, skip_range, bundle_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, (SELECT id FROM bundle WHERE package = ?1 AND name = ?3))")?;
        let mut ins_dep = tx.prepare("INSERT INTO deprecation_entry (package, seq, schema, name, message) VALUES (?1, ?2, ?3, ?4, ?5)")?;

        let total = cat.packages.len() as u64;
        for (i, pkg) in cat.packages.values().enumerate() {
            ins_pkg.execute(params![
                pkg.name,
                pkg.default_channel,
                pkg.description,
                pkg.icon.as_ref().map(|i| &i.base64data),
                pkg.icon.as_ref().map(|i| &i.mediatype),
                super::columns::properties_text(&pkg.properties),
                pkg.package_deprecation(),
            ])?;
            let (csv_description, csv_icon) =
                crate::wire::csv_package_parts(&pkg.description, pkg.icon.as_ref());
            set_csv.execute(params![pkg.name, csv_description, csv_icon])?;
            // Before the channels: each channel entry holds its bundle's rowid.
            for b in pkg.bundles.values() {
                let deprecation = pkg.bundle_deprecation(&b.name);
                if added.contains(&(b.package.clone(), b.name.clone())) {
                    if let Some(msg) = deprecation {
                        set_bundle_deprecation(tx, &b.package, &b.name, msg)?;
                    }
                } else if b.is_light() {
                    bail!("bundle {} of package {} was not stored", b.name, b.package);
                } else {
                    add_bundle_rows(tx, b, deprecation, pending)?;
                }
            }
            let versions = graph::Versions::of(pkg);
            for ch in pkg.channels.values() {
                let order = graph::channel_order(ch);
                let head = order.first().copied().unwrap_or("");
                ins_ch.execute(params![
                    pkg.name,
                    ch.name,
                    head,
                    super::columns::properties_text(&ch.properties),
                    pkg.channel_deprecation(&ch.name)
                ])?;
                let position: std::collections::HashMap<&str, usize> =
                    order.iter().enumerate().map(|(i, n)| (*n, i)).collect();
                // Rows go in primary-key order (by bundle name), so the table is written
                // append-only; `seq` keeps the catalog's order.
                let mut entries: Vec<(usize, &ChannelEntry)> =
                    ch.entries.iter().enumerate().collect();
                entries.sort_by(|a, b| a.1.name.cmp(&b.1.name));
                for (seq, e) in entries {
                    ins_entry.execute(params![
                        pkg.name,
                        ch.name,
                        e.name,
                        seq as i64,
                        position
                            .get(e.name.as_str())
                            .copied()
                            .unwrap_or(usize::MAX >> 1) as i64,
                        e.replaces,
                        super::columns::skips_text(&e.skips),
                        e.skip_range,
                    ])?;
                }
                // In primary-key order (to, from, kind), as the entries above.
                let mut edges = graph::channel_edges(&versions, ch);
                edges.sort_by(|a, b| {
                    (&a.to, &a.from, a.kind.as_str()).cmp(&(&b.to, &b.from, b.kind.as_str()))
                });
                let kinds: Vec<(&str, bool)> = edges
                    .iter()
                    .map(|e| (e.kind.as_str(), !pkg.bundles.contains_key(&e.to)))
                    .collect();
                let rows: Vec<[&dyn rusqlite::ToSql; 6]> = edges
                    .iter()
                    .zip(&kinds)
                    .map(|(e, (kind, synthetic))| -> [&dyn rusqlite::ToSql; 6] {
                        [&pkg.name, &ch.name, &e.from, &e.to, kind, synthetic]
                    })
                    .collect();
                insert_rows(
                    tx,
                    "INSERT OR IGNORE INTO edge (package, channel, from_bundle, to_bundle, kind, synthetic)",
                    &rows,
                )?;
                let replaced = graph::replacements(&edges, &position);
                answers::write_replacements(tx, &pkg.name, &ch.name, &replaced)?;
            }
            if let Some(d) = &pkg.deprecations {
                for (seq, e) in d.entries.iter().enumerate() {
                    ins_dep.execute(params![pkg.name, seq as i64, e.schema, e.name, e.message])?;
                }
            }
            progress(i as u64 + 1, total);
        }
        let mut ins_meta = tx.prepare(
            "INSERT INTO custom_meta (schema, package, name, blob) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for m in &cat.others {
            ins_meta.execute(params![m.schema, m.package, m.name, m.blob])?;
        }
    }
    pending.write(tx, true)?;
    answers::write_default_providers(tx)?;
    let stored: i64 = tx.query_row("SELECT count(*) FROM bundle", [], |r| r.get(0))?;
    if stored as usize != cat.bundle_count() {
        bail!(
            "internal error: {stored} bundles stored for {} in the catalog",
            cat.bundle_count()
        );
    }
    Ok(())
}
