//! Read queries over a built store, one function per question the server asks.
//!
//! Every query is an indexed lookup; update edges come from the materialized `edge` table, so
//! no graph rule is evaluated here. "Closest to the head" is the stored `position`.

use super::package_index::PackageIndex;
use super::Store;
use crate::api;
use crate::wire::{encode_bundle, EncodedBundle, Manifests};
use anyhow::Result;
use bytes::Bytes;
use rusqlite::{params, OptionalExtension};
use std::sync::OnceLock;

/// Which part of a (package, channel, bundle) address did not resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    Package,
    Channel,
    Bundle,
}

/// Why GetDefaultBundleThatProvides has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoDefaultProvider {
    /// No channel head provides the API.
    NoHead,
    /// Channel heads provide it, but none in its package's default channel.
    NotInDefaultChannel,
}

/// A channel entry with its declared edges, as the provider queries need it.
#[derive(Debug, Clone)]
pub struct EntryRow {
    pub package: String,
    pub channel: String,
    pub bundle: String,
    pub replaces: String,
    pub skips: Vec<String>,
    pub position: i64,
}

/// One page of ListBundles, keyed for the next page by (channel, package, bundle).
pub type StreamKey = (String, String, String);

impl Store {
    /// The package index, loaded on first use.
    pub fn package_index(&self) -> Result<&PackageIndex> {
        if let Some(ix) = self.inner.packages.get() {
            return Ok(ix);
        }
        let ix = PackageIndex::load(&*self.conn()?)?;
        Ok(self.inner.packages.get_or_init(|| ix))
    }

    pub fn list_packages(&self) -> Result<Vec<String>> {
        Ok(self.package_index()?.names().map(str::to_string).collect())
    }

    pub fn get_package(&self, name: &str) -> Result<Option<api::Package>> {
        Ok(self.package_index()?.package(name).map(|p| p.to_api()))
    }

    /// Checks that a package and channel exist.
    pub fn check_channel(&self, package: &str, channel: &str) -> Result<Result<(), Missing>> {
        Ok(self.package_index()?.channel(package, channel).map(|_| ()))
    }

    /// A bundle as a member of a channel, encoded. `trimmed` leaves replaces/skips empty, as
    /// every single-bundle RPC does.
    pub fn get_bundle(
        &self,
        package: &str,
        channel: &str,
        name: &str,
        trimmed: bool,
    ) -> Result<Result<EncodedBundle, Missing>> {
        if let Err(m) = self.check_channel(package, channel)? {
            return Ok(Err(m));
        }
        self.get_entry_bundle(package, channel, name, trimmed)
    }

    /// [`Store::get_bundle`] for a caller that has already checked the package and channel:
    /// a missing entry is `Missing::Bundle`.
    pub fn get_entry_bundle(
        &self,
        package: &str,
        channel: &str,
        name: &str,
        trimmed: bool,
    ) -> Result<Result<EncodedBundle, Missing>> {
        static SQL: OnceLock<String> = OnceLock::new();
        let sql = SQL.get_or_init(|| {
            format!(
                "{} WHERE e.package = ?1 AND e.channel = ?2 AND e.bundle = ?3",
                bundle_select("1")
            )
        });
        self.one_bundle(sql, [package, channel, name], trimmed)
    }

    /// GetBundleThatReplaces: of the entries of a channel that replace or skip `name`, the
    /// one closest to the head (then by name), encoded and trimmed. Which one was decided at
    /// ingest (`replacement`, see `store::answers`); it is looked up and read by one
    /// statement. A missing entry is `Missing::Bundle`.
    pub fn replacement_in_channel(
        &self,
        package: &str,
        channel: &str,
        name: &str,
    ) -> Result<Result<EncodedBundle, Missing>> {
        static SQL: OnceLock<String> = OnceLock::new();
        let sql = SQL.get_or_init(|| {
            format!(
                "{} WHERE e.package = ?1 AND e.channel = ?2 AND e.bundle = (
                     SELECT replacing FROM replacement
                     WHERE package = ?1 AND channel = ?2 AND replaced = ?3)",
                bundle_select("1")
            )
        });
        self.one_bundle(sql, [package, channel, name], true)
    }

    /// The first row of a [`bundle_select`] statement, encoded.
    fn one_bundle(
        &self,
        sql: &str,
        params: [&str; 3],
        trimmed: bool,
    ) -> Result<Result<EncodedBundle, Missing>> {
        let c = self.conn()?;
        let mut st = c.prepare_cached(sql)?;
        let mut rows = st.query(params)?;
        match rows.next()? {
            Some(r) => Ok(Ok(encode_row(r, trimmed, &c)?)),
            None => Ok(Err(Missing::Bundle)),
        }
    }

    /// The head of a channel.
    pub fn channel_head(&self, package: &str, channel: &str) -> Result<Option<String>> {
        Ok(self
            .package_index()?
            .channel(package, channel)
            .ok()
            .map(|c| c.head()))
    }

    /// Every entry in any package that replaces or skips `name`, with the entry's own replaces.
    pub fn entries_that_replace(&self, name: &str) -> Result<Vec<api::ChannelEntry>> {
        let c = self.conn()?;
        let mut st = c.prepare_cached(
            "SELECT e.package, e.channel, e.bundle, e.replaces FROM edge g
             JOIN channel_entry e ON e.package = g.package AND e.channel = g.channel AND e.bundle = g.from_bundle
             WHERE g.to_bundle = ?1 AND g.kind IN ('replaces', 'skips')
             GROUP BY e.package, e.channel, e.bundle ORDER BY e.package, e.channel, e.bundle",
        )?;
        let v = st
            .query_map([name], |r| {
                Ok(api::ChannelEntry {
                    package_name: r.get(0)?,
                    channel_name: r.get(1)?,
                    bundle_name: r.get(2)?,
                    replaces: r.get(3)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(v)
    }

    /// Entries whose bundle provides the exact group/version/kind.
    pub fn providing_entries(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Vec<EntryRow>> {
        let c = self.conn()?;
        let mut st = c.prepare_cached(
            "SELECT e.package, e.channel, e.bundle, e.replaces, e.skips, e.position
             FROM provided_api a JOIN bundle b ON b.id = a.bundle_id
             JOIN channel_entry e ON e.package = b.package AND e.bundle = b.name
             WHERE a.api_group = ?1 AND a.version = ?2 AND a.kind = ?3
             ORDER BY e.package, e.channel, e.bundle",
        )?;
        let v = st
            .query_map([group, version, kind], |r| {
                let skips: String = r.get(4)?;
                Ok(EntryRow {
                    package: r.get(0)?,
                    channel: r.get(1)?,
                    bundle: r.get(2)?,
                    replaces: r.get(3)?,
                    skips: serde_json::from_str(&skips).unwrap_or_default(),
                    position: r.get(5)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(v)
    }

    /// GetDefaultBundleThatProvides: the answer decided at ingest (`default_provider`, see
    /// `store::build`), trimmed as GetBundle's.
    pub fn default_provider(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Result<EncodedBundle, NoDefaultProvider>> {
        // The answer, found and read by one statement; only when there is none is the
        // table asked again, for which error it is.
        static SQL: OnceLock<String> = OnceLock::new();
        let sql = SQL.get_or_init(|| {
            format!(
                "{} WHERE (e.package, e.channel, e.bundle) = (
                     SELECT package, channel, bundle FROM default_provider
                     WHERE api_group = ?1 AND version = ?2 AND kind = ?3)",
                bundle_select("1")
            )
        });
        if let Ok(answer) = self.one_bundle(sql, [group, version, kind], true)? {
            return Ok(Ok(answer));
        }
        type Head = (Option<String>, Option<String>, Option<String>);
        let head: Option<Head> = self
            .conn()?
            .prepare_cached(
                "SELECT package, channel, bundle FROM default_provider
                 WHERE api_group = ?1 AND version = ?2 AND kind = ?3",
            )?
            .query_row([group, version, kind], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?;
        match head {
            Some((Some(p), Some(ch), Some(b))) => {
                anyhow::bail!("channel head {p}/{ch}/{b} has no channel entry")
            }
            Some(_) => Ok(Err(NoDefaultProvider::NotInDefaultChannel)),
            None => Ok(Err(NoDefaultProvider::NoHead)),
        }
    }

    /// True when `bundle` is an entry of the channel.
    pub fn in_channel(&self, package: &str, channel: &str, bundle: &str) -> Result<bool> {
        let c = self.conn()?;
        let hit: Option<i64> = c
            .prepare_cached(
                "SELECT 1 FROM channel_entry WHERE package = ?1 AND channel = ?2 AND bundle = ?3",
            )?
            .query_row([package, channel, bundle], |r| r.get(0))
            .optional()?;
        Ok(hit.is_some())
    }

    pub fn default_channel(&self, package: &str) -> Result<Option<String>> {
        Ok(self
            .package_index()?
            .package(package)
            .map(|p| p.default_channel().to_string()))
    }

    /// The next page of ListBundles after `after`, in (channel, package, bundle) order. The
    /// connection is released before the page is sent, so a slow reader holds nothing.
    pub fn list_bundles_page(
        &self,
        after: Option<&StreamKey>,
        limit: usize,
    ) -> Result<Vec<(StreamKey, EncodedBundle)>> {
        let c = self.conn()?;
        let mut st = c.prepare_cached(&list_bundles_sql(after.is_some(), limit))?;
        let mut rows = match after {
            None => st.query([])?,
            Some((ch, pkg, name)) => st.query(params![ch, pkg, name])?,
        };
        let mut out = Vec::with_capacity(limit);
        while let Some(r) = rows.next()? {
            let key: StreamKey = (r.get(0)?, r.get(1)?, r.get(2)?);
            out.push((key, encode_row(r, false, &c)?));
        }
        Ok(out)
    }

    /// Custom metas of one schema and exactly one package ("" for metas without a package).
    pub fn custom_metas(&self, schema: &str, package: &str) -> Result<Vec<String>> {
        let c = self.conn()?;
        let mut st = c.prepare_cached(
            "SELECT blob FROM custom_meta WHERE schema = ?1 AND package = ?2 ORDER BY seq",
        )?;
        let v = st
            .query_map([schema, package], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(v)
    }
}

/// ListBundles' page statement: the first page, or the page after a key (`?1, ?2, ?3`).
///
/// Two statements, not `?1 OR (...) > (...)`: with the OR, SQLite scans the stream index from
/// its start on every page, so the whole stream was quadratic (6 s for the 38,000 entries of
/// the 16x synthetic catalog); the row-value bound alone seeks. The manifests of bundles with
/// an image are left out, as upstream does. The page size is written into the text, not
/// bound: SQLite (3.53) plans with a bound LIMIT's value and so compiles the statement again
/// each time that parameter is bound, which was every page.
fn list_bundles_sql(after: bool, limit: usize) -> String {
    let columns = bundle_select("b.image = ''");
    let bound = match after {
        true => "WHERE (e.channel, e.package, e.bundle) > (?1, ?2, ?3)",
        false => "",
    };
    format!("{columns} {bound} ORDER BY e.channel, e.package, e.bundle LIMIT {limit}")
}

/// The columns [`encode_row`] reads, for a channel entry `e` joined to its bundle `b` by the
/// bundle's rowid (schema 9): the channel, package and bundle names, then what the answer is
/// spliced from. Manifests are read only where `with_manifests` (SQL) holds (ListBundles sends
/// no manifests of bundles with an image). A synthesized CSV's template and its package's
/// parts are not columns here: the statement gives the bundle's rowid and `csv_parts`, and
/// [`read_csv_inputs`] reads them with blob handles. `csv_synth` and `csv_parts` are stored
/// before the large columns (schema 8), so the statement reads none of their overflow pages.
fn bundle_select(with_manifests: &str) -> String {
    format!(
        "SELECT e.channel, e.package, e.bundle, e.replaces, e.skips, e.skip_range, b.wire_core,
                CASE WHEN {with_manifests} THEN b.wire_manifests END,
                CASE WHEN {with_manifests} THEN b.csv_synth END, b.id, b.csv_parts
         FROM channel_entry e JOIN bundle b ON b.id = e.bundle_id"
    )
}

/// One row of [`bundle_select`] as its encoded answer; `c` is the row's connection.
fn encode_row(
    r: &rusqlite::Row,
    trimmed: bool,
    c: &super::Conn,
) -> rusqlite::Result<EncodedBundle> {
    let text = |i: usize| r.get_ref(i).and_then(|v| Ok(v.as_str()?));
    let mut entry = api::Bundle {
        channel_name: r.get(0)?,
        skip_range: r.get(5)?,
        ..Default::default()
    };
    if !trimmed {
        entry.replaces = r.get(3)?;
        entry.skips = serde_json::from_str(text(4)?).unwrap_or_default();
    }
    let core = r.get_ref(6)?.as_blob()?;
    let manifests = r.get_ref(7)?.as_blob_or_null()?;
    let synthesized = r.get::<_, Option<bool>>(8)? == Some(true);
    let manifests = match manifests {
        None => Manifests::None,
        Some(m) if !synthesized => Manifests::Stored(m),
        Some(objects) => {
            let [template, description, icon] = read_csv_inputs(c, r.get(9)?, r.get(10)?)?;
            Manifests::Synthesized {
                objects,
                template,
                description,
                icon,
            }
        }
    };
    Ok(encode_bundle(core, &entry, manifests))
}

/// A synthesized CSV's template (bundle `bundle_id`) and its package's description and icon
/// (`package_csv` row `parts`; empty without one), read into one reused buffer
/// ([`crate::memory::answer_buffers`]) with the connection's blob handles.
fn read_csv_inputs(
    c: &super::Conn,
    bundle_id: i64,
    parts: Option<i64>,
) -> rusqlite::Result<[Bytes; 3]> {
    use super::blobs::Column;
    use crate::memory::answer_buffers;
    const COLUMNS: [Column; 3] = [Column::Template, Column::Description, Column::Icon];
    let mut blobs = c.blobs();
    let mut lens = [blobs.seek(c, Column::Template, bundle_id)?, 0, 0];
    if let Some(id) = parts {
        lens[1] = blobs.seek(c, Column::Description, id)?;
        lens[2] = blobs.seek(c, Column::Icon, id)?;
    }
    let mut buf = answer_buffers::take(lens.iter().sum());
    let mut ends = [0; 3];
    for ((col, len), end) in COLUMNS.into_iter().zip(lens).zip(&mut ends) {
        let at = buf.len();
        // An empty value reads nothing (its handle may not have been positioned).
        blobs.read(c, col, &mut buf.spare_capacity_mut()[..len])?;
        // SAFETY: `read` filled these `len` bytes.
        unsafe { buf.set_len(at + len) };
        *end = buf.len();
    }
    let all = Bytes::from_owner(answer_buffers::Reused(buf));
    Ok([
        all.slice(..ends[0]),
        all.slice(ends[0]..ends[1]),
        all.slice(ends[1]..ends[2]),
    ])
}

impl Store {
    /// (packages, channels, bundles): the served catalog's size, for metrics and logs.
    pub fn counts(&self) -> Result<(u64, u64, u64)> {
        let c = self.conn()?;
        Ok(c.query_row(
            "SELECT (SELECT count(*) FROM package), (SELECT count(*) FROM channel), (SELECT count(*) FROM bundle)",
            [],
            |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64, r.get::<_, i64>(2)? as u64)),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// Paging through ListBundles compiles the page statement once: a bound LIMIT made SQLite
    /// compile it again every page.
    #[test]
    fn paging_never_recompiles_the_page_statement() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::demo_store(dir.path());
        let (mut after, mut pages) = (None, 0);
        while let Some((key, _)) = store.list_bundles_page(after.as_ref(), 2).unwrap().pop() {
            after = Some(key);
            pages += 1;
        }
        assert!(pages >= 3, "the demo catalog pages {pages} times");
        let c = store.conn().unwrap();
        let st = c.prepare_cached(&list_bundles_sql(true, 2)).unwrap();
        // Every page after the first, and the empty one that ends the stream.
        assert_eq!(st.get_status(StatementStatus::Run), pages);
        assert_eq!(st.get_status(StatementStatus::RePrepare), 0);
    }
}
