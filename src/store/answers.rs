//! Answers decided once at ingest rather than on every call: GetDefaultBundleThatProvides'
//! (`default_provider`, schema 6, by the SQL statement below) and GetBundleThatReplaces'
//! (`replacement`, schema 7, by [`crate::graph::replacements`]). The server only looks the
//! answers up ([`super::query`]).

use super::batch::insert_rows;
use anyhow::Result;
use rusqlite::Connection;
use std::collections::BTreeMap;

/// GetDefaultBundleThatProvides, decided for every API a channel head provides (the
/// `default_provider` table, schema 6): of the channel heads whose bundle provides the API,
/// the one in its package's default channel, first by package name; none (NULLs) when heads
/// provide it but none in a default channel. The heads are found first, one per channel
/// (`CROSS JOIN` keeps that order: the tables have no statistics yet, and SQLite otherwise
/// went through every bundle, 0.12 s), and `provided_api` is scanned once against them:
/// driven from `provided_api` instead, the statement looked up a bundle, a package and its
/// channels for each of the community catalog's 33,950 provided APIs (0.6 s).
const DEFAULT_PROVIDERS: &str = "
    WITH head AS MATERIALIZED (
        SELECT b.id, c.package, c.name AS channel, c.head, c.name = p.default_channel AS d
        FROM channel c CROSS JOIN package p ON p.name = c.package
        CROSS JOIN bundle b ON b.package = c.package AND b.name = c.head)
    INSERT INTO default_provider (api_group, version, kind, package, channel, bundle)
    SELECT api_group, version, kind, package, channel, bundle FROM (
        SELECT a.api_group, a.version, a.kind,
               CASE WHEN h.d THEN h.package END AS package,
               CASE WHEN h.d THEN h.channel END AS channel,
               CASE WHEN h.d THEN h.head END AS bundle,
               row_number() OVER (PARTITION BY a.api_group, a.version, a.kind
                                  ORDER BY h.d DESC, h.package) AS n
        FROM provided_api a CROSS JOIN head h ON h.id = a.bundle_id)
    WHERE n = 1;";

/// Fills `default_provider`, once every bundle and channel is written.
pub(super) fn write_default_providers(conn: &Connection) -> Result<()> {
    conn.execute_batch(DEFAULT_PROVIDERS)?;
    Ok(())
}

/// Writes a channel's [`crate::graph::replacements`] (replaced name to replacing entry), in
/// key order, so a catalog's rows go in append-only.
pub(super) fn write_replacements(
    conn: &Connection,
    package: &str,
    channel: &str,
    replaced: &BTreeMap<&str, &str>,
) -> Result<()> {
    let rows: Vec<[&dyn rusqlite::ToSql; 4]> = replaced
        .iter()
        .map(|(to, by)| -> [&dyn rusqlite::ToSql; 4] { [&package, &channel, to, by] })
        .collect();
    insert_rows(
        conn,
        "INSERT INTO replacement (package, channel, replaced, replacing)",
        &rows,
    )
}
