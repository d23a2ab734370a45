//! The SQLite store: a built catalog with every update edge materialized.
//!
//! `opreg ingest` writes a database once ([`write_catalog`]): packages, channels with their
//! heads, bundles with properties and related images, channel entries with their position from
//! the head, deprecations, custom metas, each bundle's precomputed wire form, and one `edge` row
//! per update edge as [`crate::graph::channel_edges`] defines them. The schema is one SQL file,
//! `migrations/10-schema/up.sql`, at version [`SCHEMA_VERSION`], recorded in
//! `PRAGMA user_version`: a database of any other version is refused (an older one is rebuilt
//! by the caller), never migrated.
//!
//! Serving opens the file read-only and immutable ([`Store::open`]); nothing here can write
//! to an opened store.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | opening and verifying a built database; the connection pool |
//! | [`build`] | the [`Builder`]: writing a validated catalog atomically, temp-file cleanup |
//! | `answers` | answers decided at ingest: GetDefaultBundleThatProvides', GetBundleThatReplaces' |
//! | `batch` | the Builder's multi-row inserts and the bundle rows it holds until a batch is full |
//! | [`load`] | reading a whole catalog back into the model |
//! | `list` | `opreg list`'s narrow queries: package, channel and entry rows |
//! | `columns` | the JSON-text columns (skips, properties), encoded and decoded once |
//! | [`package_index`] | packages and channels, held in memory while a store is served |
//! | [`questions`] | the server's questions, one per RPC, with upstream's "not found" texts |
//! | [`query`] | reading a bundle answer, spliced from the stored wire form; ListBundles' pages |
//! | `blobs` | reading a CSV's template, description and icon into an answer's own buffer |
//! | [`upgrade_query`] | the [`crate::graph::resolve::UpgradeGraph`] over stored edges |

mod answers;
mod batch;
mod blobs;
mod build;
mod columns;
mod list;
mod load;
pub mod package_index;
pub mod query;
pub mod questions;
pub mod upgrade_query;

pub use build::{check_output, write_catalog, Builder};
pub use load::PartFn;

use anyhow::{bail, Context, Result};
use rusqlite::{Connection, OptionalExtension};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The schema this opreg writes and reads: every table and index, as SQL.
const SCHEMA: &str = include_str!("../../migrations/10-schema/up.sql");

/// The version of [`SCHEMA`]. It only ever increases: raise it with every change to the
/// schema. Versions 1 to 9 were the earlier schemas (then counted by their migration files),
/// so a database they wrote reads as older and is rebuilt, never as newer.
pub const SCHEMA_VERSION: i64 = 10;

/// The schema version this opreg writes and reads ([`SCHEMA_VERSION`]).
pub fn schema_version() -> i64 {
    SCHEMA_VERSION
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

/// Opens a built database read-only (see [`crate::sqlite::open_read_only`]) with a small page
/// cache per connection: 256 KB, room for the b-trees' upper levels. A bundle's row is
/// mostly overflow pages read once, so a larger cache buys no speed (GetBundleThatReplaces at
/// 64 callers used the same server CPU with 1 MB, 256 KB and 64 KB), while a loaded server
/// holds several connections at once: with 1 MB each, its median RSS under the stress load
/// was 5 MB higher (33 against 28 MB).
fn open_read_only(path: &Path) -> Result<Connection> {
    let conn = crate::sqlite::open_read_only(path)?;
    conn.execute_batch("PRAGMA cache_size = -256;")?;
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
    idle: Mutex<Vec<Pooled>>,
    /// Packages and channels, read once on first use ([`package_index::PackageIndex`]).
    packages: std::sync::OnceLock<package_index::PackageIndex>,
    /// Dropped with the last handle: a reload's private directory, removed only when no call
    /// reads this version any more.
    _keep: Option<Box<dyn std::any::Any + Send + Sync>>,
}

/// A connection with its blob handles, which are closed first (fields drop in order).
struct Pooled {
    blobs: std::cell::RefCell<blobs::Blobs>,
    conn: Connection,
}

impl Pooled {
    fn new(conn: Connection) -> Pooled {
        Pooled {
            blobs: Default::default(),
            conn,
        }
    }
}

/// A pooled connection, returned to the idle list on drop.
pub struct Conn<'a> {
    conn: Option<Pooled>,
    store: &'a Inner,
}

impl Conn<'_> {
    /// The connection's blob handles ([`blobs`]).
    fn blobs(&self) -> std::cell::RefMut<'_, blobs::Blobs> {
        self.conn
            .as_ref()
            .expect("connection present until drop")
            .blobs
            .borrow_mut()
    }
}

impl std::ops::Deref for Conn<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self
            .conn
            .as_ref()
            .expect("connection present until drop")
            .conn
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
        crate::sqlite::check_header(path)?;
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
                idle: Mutex::new(vec![Pooled::new(conn)]),
                packages: std::sync::OnceLock::new(),
                _keep: None,
            }),
        })
    }

    /// Keeps `guard` (e.g. the temporary directory holding the file) alive as long as any
    /// clone of this store. Call it on a freshly opened store (no clones yet); otherwise the
    /// guard is dropped at once.
    pub fn keep_alive(mut self, guard: impl std::any::Any + Send + Sync) -> Store {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner._keep = Some(Box::new(guard));
        }
        self
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// A connection for one query.
    pub fn conn(&self) -> Result<Conn<'_>> {
        let existing = self.inner.idle.lock().ok().and_then(|mut v| v.pop());
        let conn = match existing {
            Some(c) => c,
            None => Pooled::new(open_read_only(&self.inner.path)?),
        };
        Ok(Conn {
            conn: Some(conn),
            store: &self.inner,
        })
    }

    /// Closes every idle pooled connection, and with it its page cache and prepared
    /// statements (the server does this when idle; the next call opens one again).
    pub fn close_idle_connections(&self) {
        let idle = match self.inner.idle.lock() {
            Ok(mut v) => std::mem::take(&mut *v),
            Err(_) => return,
        };
        drop(idle);
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
}

/// The demo catalog written to `demo.db` in `dir` and opened, for the store's unit tests.
#[cfg(test)]
fn demo_store(dir: &Path) -> Store {
    let db = dir.join("demo.db");
    let cat = crate::demo::catalog().expect("the demo catalog is valid");
    write_catalog(&cat, &db, &crate::demo::digest(), &mut |_, _| {}).unwrap();
    Store::open(&db).unwrap()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema version only increases: a database of any earlier schema, 1 to 9 from the
    /// time the version was the count of migration files, reads as older (and is rebuilt),
    /// never as newer; this build's own reads as current.
    #[test]
    fn databases_of_earlier_schemas_read_as_older() {
        let dir = tempfile::tempdir().unwrap();
        let db = demo_store(dir.path()).path().to_path_buf();
        let written: i64 = Connection::open(&db)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(written, SCHEMA_VERSION);
        for v in (1..=9).chain([SCHEMA_VERSION - 1, SCHEMA_VERSION + 1]) {
            let copy = dir.path().join(format!("v{v}.db"));
            std::fs::copy(&db, &copy).unwrap();
            Connection::open(&copy)
                .unwrap()
                .pragma_update(None, "user_version", v)
                .unwrap();
            let err = Store::open(&copy).err().expect("another schema is refused");
            let want = match v > SCHEMA_VERSION {
                true => "written by a newer opreg",
                false => "older than this opreg's",
            };
            assert!(format!("{err:#}").contains(want), "version {v}: {err:#}");
        }
        assert!(Store::open(&db).is_ok());
    }
}
