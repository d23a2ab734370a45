//! Which upstream index schema a file has (0–13), and the tables and columns each version
//! must have; anything else is refused before a row is read.

use crate::sqlite::table_exists;
use anyhow::{bail, Context, Result};
use rusqlite::Connection;
use std::collections::HashSet;
use std::path::Path;

/// The newest schema version upstream ever wrote.
pub const MAX_SCHEMA_VERSION: i64 = 13;

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

fn columns(conn: &Connection, table: &str) -> Result<HashSet<String>> {
    let mut st = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let cols = st
        .query_map([table], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(cols)
}

/// Tables (and `operatorbundle` columns) each schema version must have.
pub(super) fn check_tables(conn: &Connection, path: &Path, version: i64) -> Result<()> {
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
