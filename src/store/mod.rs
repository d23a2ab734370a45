//! The SQLite store: a built catalog with every update edge materialized.
//!
//! `opreg ingest` writes a database once ([`write_catalog`]): packages, channels with their
//! heads, bundles with properties and related images, channel entries with their position from
//! the head, deprecations, custom metas, each bundle's precomputed wire form, and one `edge` row
//! per update edge as [`crate::graph::channel_edges`] defines them. The schema is the versioned
//! SQL in `migrations/`, tracked in `PRAGMA user_version`.
//!
//! Serving opens the file read-only and immutable ([`Store::open`]); nothing here can write
//! to an opened store. Queries live in [`query`].

pub mod query;
pub mod upgrade_query;

use crate::api;
use crate::graph;
use crate::model::*;
use anyhow::{bail, Context, Result};
use include_dir::{include_dir, Dir};
use prost::Message;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

static MIGRATIONS_DIR: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/migrations");

/// The schema version this opreg writes and reads.
pub fn schema_version() -> i64 {
    MIGRATIONS_DIR.dirs().count() as i64
}

const FORMAT_KEY: &str = "format";
const FORMAT_VALUE: &str = "opreg-catalog";

/// True when `path` is a database written by opreg (as opposed to an upstream index).
pub fn is_opreg_db(path: &Path) -> bool {
    open_read_only(path)
        .and_then(|c| {
            c.query_row(
                "SELECT value FROM catalog_info WHERE key = ?1",
                [FORMAT_KEY],
                |r| r.get::<_, String>(0),
            )
            .map_err(anyhow::Error::from)
        })
        .map(|v| v == FORMAT_VALUE)
        .unwrap_or(false)
}

fn uri_for(path: &Path) -> String {
    let mut s = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => s.push_str("%25"),
            '?' => s.push_str("%3f"),
            '#' => s.push_str("%23"),
            c => s.push(c),
        }
    }
    s.push_str("?immutable=1");
    s
}

fn open_read_only(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        uri_for(path),
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("cannot open {}", path.display()))?;
    conn.execute_batch("PRAGMA query_only = ON; PRAGMA cache_size = -1024;")?;
    Ok(conn)
}

/// A read-only handle on a built catalog, cheap to clone and share across tasks.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// Idle connections. A caller takes one or opens a new one (immutable opens take
    /// microseconds), so no caller ever waits on another; a stalled stream holds none.
    idle: Mutex<Vec<Connection>>,
    /// Packages and channels, read once on first use ([`query::PackageIndex`]).
    packages: std::sync::OnceLock<query::PackageIndex>,
}

/// A pooled connection, returned to the idle list on drop.
pub struct Conn<'a> {
    conn: Option<Connection>,
    store: &'a Inner,
}

impl std::ops::Deref for Conn<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("connection present until drop")
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            if let Ok(mut idle) = self.store.idle.lock() {
                if idle.len() < 32 {
                    idle.push(c);
                }
            }
        }
    }
}

impl Store {
    /// Opens a built database read-only, refusing files that are not opreg catalogs, are
    /// damaged, or were written by a newer opreg. Reads every page ([`Store::verify`]).
    pub fn open(path: &Path) -> Result<Store> {
        Self::open_checked(path, true)
    }

    /// Like [`Store::open`], with only the checks that do not read the whole file: the SQLite
    /// header and the file size (a truncated copy is refused), the format marker and the
    /// schema version. Pages are not checked until [`Store::verify`] runs: the server calls it
    /// right after it starts answering and exits if it fails.
    pub fn open_unverified(path: &Path) -> Result<Store> {
        Self::open_checked(path, false)
    }

    /// SQLite's structural check of every page (`PRAGMA quick_check`), on a connection of its
    /// own that is closed afterwards.
    pub fn verify(&self) -> Result<()> {
        quick_check(&open_read_only(&self.inner.path)?, &self.inner.path)
    }

    fn open_checked(path: &Path, verify: bool) -> Result<Store> {
        check_header(path)?;
        let conn = open_read_only(path)?;
        if verify {
            quick_check(&conn, path)?;
        }
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let format: Option<String> = conn
            .query_row(
                "SELECT value FROM catalog_info WHERE key = ?1",
                [FORMAT_KEY],
                |r| r.get(0),
            )
            .optional()
            .unwrap_or(None);
        if format.as_deref() != Some(FORMAT_VALUE) {
            bail!(
                "{} is a SQLite file but not an opreg catalog database (no catalog_info format marker)",
                path.display()
            );
        }
        if version > schema_version() {
            bail!(
                "{} has schema version {version}, written by a newer opreg; this opreg reads up to version {}. Upgrade opreg or rebuild the database with this version's `opreg ingest`",
                path.display(),
                schema_version()
            );
        }
        if version < schema_version() {
            bail!(
                "{} has schema version {version}, older than this opreg's {}; rebuild it with `opreg ingest`",
                path.display(),
                schema_version()
            );
        }
        Ok(Store {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                idle: Mutex::new(vec![conn]),
                packages: std::sync::OnceLock::new(),
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// A connection for one query.
    pub fn conn(&self) -> Result<Conn<'_>> {
        let existing = self.inner.idle.lock().ok().and_then(|mut v| v.pop());
        let conn = match existing {
            Some(c) => c,
            None => open_read_only(&self.inner.path)?,
        };
        Ok(Conn {
            conn: Some(conn),
            store: &self.inner,
        })
    }

    /// Reads a value recorded at build time (`opreg_version`, `source_digest`, counts).
    pub fn info(&self, key: &str) -> Result<Option<String>> {
        let c = self.conn()?;
        Ok(c.query_row(
            "SELECT value FROM catalog_info WHERE key = ?1",
            [key],
            |r| r.get(0),
        )
        .optional()?)
    }

    /// Reads the whole catalog back into the model (render, re-ingest, resolution).
    pub fn load_catalog(&self) -> Result<Catalog> {
        let c = self.conn()?;
        let origin = Origin::file(self.inner.path.display().to_string());
        let mut cat = Catalog::default();
        let props_of = |s: String| -> Vec<Property> {
            serde_json::from_str::<Vec<(String, String)>>(&s)
                .unwrap_or_default()
                .into_iter()
                .map(|(t, v)| Property {
                    r#type: t,
                    value: v,
                })
                .collect()
        };
        let mut st = c.prepare("SELECT name, default_channel, description, icon_data, icon_mediatype, properties FROM package ORDER BY name")?;
        let rows = st.query_map([], |r| {
            Ok(Package {
                name: r.get(0)?,
                default_channel: r.get(1)?,
                description: r.get(2)?,
                icon: match (
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                ) {
                    (Some(d), m) => Some(Icon {
                        base64data: d,
                        mediatype: m.unwrap_or_default(),
                    }),
                    _ => None,
                },
                properties: props_of(r.get(5)?),
                origin: origin.clone(),
                ..Default::default()
            })
        })?;
        for p in rows {
            let p = p?;
            cat.packages.insert(p.name.clone(), p);
        }
        let mut st =
            c.prepare("SELECT package, name, properties FROM channel ORDER BY package, name")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let pkg: String = r.get(0)?;
            let name: String = r.get(1)?;
            if let Some(p) = cat.packages.get_mut(&pkg) {
                p.channels.insert(
                    name.clone(),
                    Channel {
                        name,
                        entries: Vec::new(),
                        properties: props_of(r.get(2)?),
                        origin: origin.clone(),
                    },
                );
            }
        }
        let mut st = c.prepare("SELECT package, channel, bundle, replaces, skips, skip_range FROM channel_entry ORDER BY package, channel, seq")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let (pkg, ch): (String, String) = (r.get(0)?, r.get(1)?);
            let skips: String = r.get(4)?;
            if let Some(c) = cat
                .packages
                .get_mut(&pkg)
                .and_then(|p| p.channels.get_mut(&ch))
            {
                c.entries.push(ChannelEntry {
                    name: r.get(2)?,
                    replaces: r.get(3)?,
                    skips: serde_json::from_str(&skips).unwrap_or_default(),
                    skip_range: r.get(5)?,
                });
            }
        }
        let mut ids = std::collections::HashMap::new();
        let mut st = c.prepare("SELECT id, package, name, image FROM bundle ORDER BY id")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let (id, pkg, name): (i64, String, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
            ids.insert(id, (pkg.clone(), name.clone()));
            if let Some(p) = cat.packages.get_mut(&pkg) {
                p.bundles.insert(
                    name.clone(),
                    Bundle {
                        name,
                        package: pkg,
                        image: r.get(3)?,
                        origin: origin.clone(),
                        ..Default::default()
                    },
                );
            }
        }
        let mut st = c.prepare(
            "SELECT bundle_id, type, value FROM bundle_property ORDER BY bundle_id, seq",
        )?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            if let Some(b) = bundle_by_id(&mut cat, &ids, r.get(0)?) {
                b.properties.push(Property {
                    r#type: r.get(1)?,
                    value: r.get(2)?,
                });
            }
        }
        let mut st =
            c.prepare("SELECT bundle_id, name, image FROM related_image ORDER BY bundle_id, seq")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            if let Some(b) = bundle_by_id(&mut cat, &ids, r.get(0)?) {
                b.related_images.push(RelatedImage {
                    name: r.get(1)?,
                    image: r.get(2)?,
                });
            }
        }
        let mut st = c.prepare(
            "SELECT package, schema, name, message FROM deprecation_entry ORDER BY package, seq",
        )?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let pkg: String = r.get(0)?;
            if let Some(p) = cat.packages.get_mut(&pkg) {
                p.deprecations
                    .get_or_insert_with(|| Deprecations {
                        entries: Vec::new(),
                        origin: origin.clone(),
                    })
                    .entries
                    .push(DeprecationEntry {
                        schema: r.get(1)?,
                        name: r.get(2)?,
                        message: r.get(3)?,
                    });
            }
        }
        let mut st =
            c.prepare("SELECT schema, package, name, blob FROM custom_meta ORDER BY seq")?;
        let metas = st.query_map([], |r| {
            Ok(Meta {
                schema: r.get(0)?,
                package: r.get(1)?,
                name: r.get(2)?,
                blob: r.get(3)?,
                origin: origin.clone(),
            })
        })?;
        for m in metas {
            cat.others.push(m?);
        }
        Ok(cat)
    }
}

fn quick_check(conn: &Connection, path: &Path) -> Result<()> {
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .with_context(|| format!("{} is not a readable SQLite database", path.display()))?;
    if check != "ok" {
        bail!(
            "{} is damaged (SQLite quick_check: {check})",
            path.display()
        );
    }
    Ok(())
}

/// Checks the 100-byte SQLite header against the file: the magic string, a valid page size,
/// and a file at least as long as the page count the header records (when SQLite marks that
/// count valid), so that a truncated copy is refused without reading the rest.
fn check_header(path: &Path) -> Result<()> {
    use std::io::Read;
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let len = f.metadata()?.len();
    let mut h = [0u8; 100];
    if len < 100 || f.read_exact(&mut h).is_err() || &h[..16] != b"SQLite format 3\0" {
        bail!("{} is not a readable SQLite database", path.display());
    }
    let page_size = match u16::from_be_bytes([h[16], h[17]]) {
        1 => 65_536u64,
        n if n >= 512 && n.is_power_of_two() => u64::from(n),
        n => bail!(
            "{} is damaged (SQLite header: page size {n})",
            path.display()
        ),
    };
    let be32 = |at: usize| u64::from(u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]));
    let pages = be32(28);
    if pages > 0 && be32(24) == be32(92) && len < pages * page_size {
        bail!(
            "{} is damaged: truncated to {len} bytes, but its header records {pages} pages of {page_size} bytes ({} bytes)",
            path.display(),
            pages * page_size
        );
    }
    Ok(())
}

fn bundle_by_id<'c>(
    cat: &'c mut Catalog,
    ids: &std::collections::HashMap<i64, (String, String)>,
    id: i64,
) -> Option<&'c mut Bundle> {
    let (pkg, name) = ids.get(&id)?;
    cat.packages.get_mut(pkg)?.bundles.get_mut(name)
}

fn props_json(props: &[Property]) -> String {
    let pairs: Vec<(&str, &str)> = props
        .iter()
        .map(|p| (p.r#type.as_str(), p.value.as_str()))
        .collect();
    serde_json::to_string(&pairs).expect("serializing strings cannot fail")
}

/// Writes a validated catalog to `output` atomically: a temp file in the same directory is
/// filled, synced and renamed over `output`. On any error `output` is left as it was.
/// `progress(done, total)` is called as packages are written.
pub fn write_catalog(
    cat: &Catalog,
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
    tmp: tempfile::NamedTempFile,
    output: PathBuf,
    dir: PathBuf,
    conn: Connection,
    /// (package, name) of every bundle row written so far.
    added: std::collections::HashSet<(String, String)>,
}

impl Builder {
    pub fn create(output: &Path) -> Result<Builder> {
        let dir = match output.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = tempfile::Builder::new()
            .prefix(".opreg-ingest-")
            .suffix(".db.tmp")
            .tempfile_in(&dir)
            .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
        // Held until the builder is gone: marks the file as belonging to a live ingest
        // (remove_stale_temp_files).
        tmp.as_file()
            .try_lock()
            .with_context(|| format!("cannot lock {}", tmp.path().display()))?;
        let mut conn = Connection::open(tmp.path())?;
        // Bundles may arrive before their package: the catalog's consistency is checked by
        // validation, not by foreign keys.
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF;",
        )?;
        let migrations = rusqlite_migration::Migrations::from_directory(&MIGRATIONS_DIR)
            .map_err(|e| anyhow::anyhow!("bad embedded migrations: {e}"))?;
        migrations
            .to_latest(&mut conn)
            .context("applying schema migrations")?;
        conn.execute_batch("BEGIN")?;
        Ok(Builder {
            tmp,
            output: output.to_path_buf(),
            dir,
            conn,
            added: Default::default(),
        })
    }

    /// Writes one bundle's rows: the bundle with its wire form (without deprecation, which
    /// [`Builder::finish`] adds), properties, related images and provided APIs. A second bundle
    /// with the same package and name is ignored here; validation reports it.
    pub fn add_bundle(&mut self, b: &Bundle) -> Result<()> {
        add_bundle_rows(&self.conn, b, None)?;
        self.added.insert((b.package.clone(), b.name.clone()));
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
        cat: &Catalog,
        digest: &str,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<()> {
        let Builder {
            tmp,
            output,
            dir,
            conn,
            added,
        } = self;
        fill(&conn, cat, &added, digest, progress)?;
        conn.execute_batch("COMMIT; ANALYZE;")?;
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
        tmp.as_file().sync_all()?;
        tmp.persist(&output).with_context(|| {
            format!(
                "cannot move the new database into place at {}",
                output.display()
            )
        })?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        remove_stale_temp_files(&dir);
        Ok(())
    }
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

fn add_bundle_rows(conn: &Connection, b: &Bundle, deprecation: Option<&str>) -> Result<()> {
    let wire = crate::wire::to_wire(b, deprecation);
    let n = conn
        .prepare_cached("INSERT OR IGNORE INTO bundle (package, name, version, image, deprecation, wire_core, wire_manifests, csv_synth) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?
        .execute(params![
            b.package,
            b.name,
            b.version(),
            b.image,
            deprecation,
            wire.core.encode_to_vec(),
            wire.manifests.encode_to_vec(),
            wire.csv_synth,
        ])?;
    if n == 0 {
        return Ok(());
    }
    let id = conn.last_insert_rowid();
    let mut ins_prop = conn.prepare_cached(
        "INSERT INTO bundle_property (bundle_id, seq, type, value) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (seq, p) in b.properties.iter().enumerate() {
        ins_prop.execute(params![id, seq as i64, p.r#type, p.value])?;
    }
    let mut ins_img = conn.prepare_cached(
        "INSERT INTO related_image (bundle_id, seq, name, image) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (seq, r) in b.related_images.iter().enumerate() {
        ins_img.execute(params![id, seq as i64, r.name, r.image])?;
    }
    let mut ins_api = conn.prepare_cached("INSERT OR IGNORE INTO provided_api (api_group, version, kind, bundle_id) VALUES (?1, ?2, ?3, ?4)")?;
    for g in b.gvks(prop::GVK) {
        ins_api.execute(params![g.group, g.version, g.kind, id])?;
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
        let mut ins_ch = tx.prepare("INSERT INTO channel (package, name, head, properties, deprecation) VALUES (?1, ?2, ?3, ?4, ?5)")?;
        let mut ins_entry = tx.prepare("INSERT INTO channel_entry (package, channel, bundle, seq, position, replaces, skips, skip_range) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?;
        let mut ins_edge = tx.prepare("INSERT OR IGNORE INTO edge (package, channel, from_bundle, to_bundle, kind, synthetic) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
        let mut ins_dep = tx.prepare("INSERT INTO deprecation_entry (package, seq, schema, name, message) VALUES (?1, ?2, ?3, ?4, ?5)")?;

        let total = cat.packages.len() as u64;
        for (i, pkg) in cat.packages.values().enumerate() {
            ins_pkg.execute(params![
                pkg.name,
                pkg.default_channel,
                pkg.description,
                pkg.icon.as_ref().map(|i| &i.base64data),
                pkg.icon.as_ref().map(|i| &i.mediatype),
                props_json(&pkg.properties),
                pkg.package_deprecation(),
            ])?;
            let versions = graph::Versions::of(pkg);
            for ch in pkg.channels.values() {
                let order = graph::channel_order(ch);
                let head = order.first().copied().unwrap_or("");
                ins_ch.execute(params![
                    pkg.name,
                    ch.name,
                    head,
                    props_json(&ch.properties),
                    pkg.channel_deprecation(&ch.name)
                ])?;
                let position: std::collections::HashMap<&str, usize> =
                    order.iter().enumerate().map(|(i, n)| (*n, i)).collect();
                for (seq, e) in ch.entries.iter().enumerate() {
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
                        serde_json::to_string(&e.skips)?,
                        e.skip_range,
                    ])?;
                }
                for edge in graph::channel_edges(&versions, ch) {
                    let synthetic = !pkg.bundles.contains_key(&edge.to);
                    ins_edge.execute(params![
                        pkg.name,
                        ch.name,
                        edge.from,
                        edge.to,
                        edge.kind.as_str(),
                        synthetic
                    ])?;
                }
            }
            for b in pkg.bundles.values() {
                let deprecation = pkg.bundle_deprecation(&b.name);
                if added.contains(&(b.package.clone(), b.name.clone())) {
                    if let Some(msg) = deprecation {
                        set_bundle_deprecation(tx, &b.package, &b.name, msg)?;
                    }
                } else if b.spilled {
                    bail!("bundle {} of package {} was not stored", b.name, b.package);
                } else {
                    add_bundle_rows(tx, b, deprecation)?;
                }
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
    let stored: i64 = tx.query_row("SELECT count(*) FROM bundle", [], |r| r.get(0))?;
    if stored as usize != cat.bundle_count() {
        bail!(
            "internal error: {stored} bundles stored for {} in the catalog",
            cat.bundle_count()
        );
    }
    Ok(())
}

/// Decodes a stored wire form, optionally with its manifests. `csv_synth` is the bundle's
/// column of that name: its csvJson is synthesized here from the stored metadata, package
/// description and icon, and related images.
pub(crate) fn decode_wire(
    conn: &Connection,
    bundle_id: i64,
    csv_synth: bool,
    core: &[u8],
    manifests: Option<&[u8]>,
) -> Result<api::Bundle> {
    let mut b = api::Bundle::decode(core)?;
    let Some(m) = manifests else {
        return Ok(b);
    };
    let mut m = api::Bundle::decode(m)?;
    if csv_synth {
        let csv = synthesized_csv(conn, bundle_id, &b.csv_name, &b.version)?;
        crate::wire::complete_manifests(&mut m, true, || csv);
    }
    b.csv_json = m.csv_json;
    b.object = m.object;
    Ok(b)
}

fn synthesized_csv(conn: &Connection, id: i64, name: &str, version: &str) -> Result<String> {
    let (description, icon_data, icon_type): (String, Option<String>, Option<String>) = conn
        .prepare_cached(
            "SELECT p.description, p.icon_data, p.icon_mediatype
             FROM bundle b JOIN package p ON p.name = b.package WHERE b.id = ?1",
        )?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    let metadata: String = conn
        .prepare_cached(
            "SELECT value FROM bundle_property WHERE bundle_id = ?1 AND type = ?2 ORDER BY seq",
        )?
        .query_row(params![id, prop::CSV_METADATA], |r| r.get(0))?;
    let related_images = conn
        .prepare_cached("SELECT name, image FROM related_image WHERE bundle_id = ?1 ORDER BY seq")?
        .query_map([id], |r| {
            Ok(RelatedImage {
                name: r.get(0)?,
                image: r.get(1)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let icon = icon_data.map(|base64data| Icon {
        base64data,
        mediatype: icon_type.unwrap_or_default(),
    });
    Ok(crate::wire::synthesize_csv(&crate::wire::CsvInputs {
        bundle_name: name,
        version,
        related_images: &related_images,
        package_description: &description,
        package_icon: icon.as_ref(),
        metadata: &metadata,
    }))
}
