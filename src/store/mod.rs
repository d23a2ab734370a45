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
    /// damaged, or were written by a newer opreg.
    pub fn open(path: &Path) -> Result<Store> {
        let conn = open_read_only(path)?;
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .with_context(|| format!("{} is not a readable SQLite database", path.display()))?;
        if check != "ok" {
            bail!(
                "{} is damaged (SQLite quick_check: {check})",
                path.display()
            );
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
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".opreg-ingest-")
        .suffix(".db.tmp")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    {
        let mut conn = Connection::open(tmp.path())?;
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = ON;",
        )?;
        let migrations = rusqlite_migration::Migrations::from_directory(&MIGRATIONS_DIR)
            .map_err(|e| anyhow::anyhow!("bad embedded migrations: {e}"))?;
        migrations
            .to_latest(&mut conn)
            .context("applying schema migrations")?;
        fill(&mut conn, cat, source_digest, progress)?;
        conn.execute_batch("ANALYZE; VACUUM;")?;
        conn.close().map_err(|(_, e)| e)?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(output).with_context(|| {
        format!(
            "cannot move the new database into place at {}",
            output.display()
        )
    })?;
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn fill(
    conn: &mut Connection,
    cat: &Catalog,
    digest: &str,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<()> {
    let tx = conn.transaction()?;
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
        let mut ins_bundle = tx.prepare("INSERT INTO bundle (package, name, version, image, deprecation, wire_core, wire_manifests) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?;
        let mut ins_prop = tx.prepare(
            "INSERT INTO bundle_property (bundle_id, seq, type, value) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut ins_img = tx.prepare(
            "INSERT INTO related_image (bundle_id, seq, name, image) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut ins_entry = tx.prepare("INSERT INTO channel_entry (package, channel, bundle, seq, position, replaces, skips, skip_range) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?;
        let mut ins_edge = tx.prepare("INSERT OR IGNORE INTO edge (package, channel, from_bundle, to_bundle, kind, synthetic) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
        let mut ins_api = tx.prepare("INSERT OR IGNORE INTO provided_api (api_group, version, kind, bundle_id) VALUES (?1, ?2, ?3, ?4)")?;
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
                let wire = crate::wire::to_wire(pkg, b);
                ins_bundle.execute(params![
                    pkg.name,
                    b.name,
                    b.version(),
                    b.image,
                    pkg.bundle_deprecation(&b.name),
                    wire.core.encode_to_vec(),
                    wire.manifests.encode_to_vec(),
                ])?;
                let id = tx.last_insert_rowid();
                for (seq, p) in b.properties.iter().enumerate() {
                    ins_prop.execute(params![id, seq as i64, p.r#type, p.value])?;
                }
                for (seq, r) in b.related_images.iter().enumerate() {
                    ins_img.execute(params![id, seq as i64, r.name, r.image])?;
                }
                for g in b.gvks(prop::GVK) {
                    ins_api.execute(params![g.group, g.version, g.kind, id])?;
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
    tx.commit()?;
    Ok(())
}

/// Decodes a stored wire form, optionally with its manifests.
pub(crate) fn decode_wire(core: &[u8], manifests: Option<&[u8]>) -> Result<api::Bundle> {
    let mut b = api::Bundle::decode(core)?;
    if let Some(m) = manifests {
        b.merge(m)?;
    }
    Ok(b)
}
