//! How a bundle answer is read: the statements that join a channel entry to its bundle's row
//! and splice the answer from the stored wire form ([`bundle_select`], [`encode_row`]), one
//! bundle or a page of ListBundles at a time. The questions the server asks are in
//! [`super::questions`]; this file is what they read rows with.
//!
//! Every query is an indexed lookup; update edges come from the materialized `edge` table, so
//! no graph rule is evaluated here. "Closest to the head" is the stored `position`.

use super::columns::Skips;
use super::Store;
use crate::api;
use crate::wire::{encode_bundle, EncodedBundle, Manifests};
use anyhow::Result;
use bytes::Bytes;
use rusqlite::params;

/// One page of ListBundles, keyed for the next page by (channel, package, bundle).
pub type StreamKey = (String, String, String);

impl Store {
    /// The first row of a [`bundle_select`] statement, encoded; `None` without a row.
    pub(super) fn one_bundle(
        &self,
        sql: &str,
        params: [&str; 3],
        trimmed: bool,
    ) -> Result<Option<EncodedBundle>> {
        let c = self.conn()?;
        let mut st = c.prepare_cached(sql)?;
        let mut rows = st.query(params)?;
        match rows.next()? {
            Some(r) => Ok(Some(encode_row(r, trimmed, &c)?)),
            None => Ok(None),
        }
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
/// bundle's rowid: the channel, package and bundle names, then what the answer is spliced
/// from. Manifests are read only where `with_manifests` (SQL) holds (ListBundles sends no
/// manifests of bundles with an image). A synthesized CSV's template and its package's parts
/// are not columns here: the statement gives the bundle's rowid and `csv_parts`, which is set
/// exactly for a bundle whose CSV is synthesized, and [`read_csv_inputs`] reads them with blob
/// handles. `csv_parts` is stored before the large columns, so the statement reads none of
/// their overflow pages.
pub(super) fn bundle_select(with_manifests: &str) -> String {
    format!(
        "SELECT e.channel, e.package, e.bundle, e.replaces, e.skips, e.skip_range, b.wire_core,
                CASE WHEN {with_manifests} THEN b.wire_manifests END, b.id, b.csv_parts
         FROM channel_entry e JOIN bundle b ON b.id = e.bundle_id"
    )
}

/// One row of [`bundle_select`] as its encoded answer; `c` is the row's connection.
fn encode_row(
    r: &rusqlite::Row,
    trimmed: bool,
    c: &super::Conn,
) -> rusqlite::Result<EncodedBundle> {
    let mut entry = api::Bundle {
        channel_name: r.get(0)?,
        skip_range: r.get(5)?,
        ..Default::default()
    };
    if !trimmed {
        entry.replaces = r.get(3)?;
        entry.skips = r.get::<_, Skips>(4)?.0;
    }
    let core = r.get_ref(6)?.as_blob()?;
    let manifests = match (r.get_ref(7)?.as_blob_or_null()?, r.get(9)?) {
        (None, _) => Manifests::None,
        (Some(m), None) => Manifests::Stored(m),
        (Some(objects), Some(parts)) => {
            let [template, description, icon] = read_csv_inputs(c, r.get(8)?, parts)?;
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
/// (`package_csv` row `parts`), read into one reused buffer
/// ([`crate::memory::answer_buffers`]) with the connection's blob handles.
fn read_csv_inputs(c: &super::Conn, bundle_id: i64, parts: i64) -> rusqlite::Result<[Bytes; 3]> {
    use super::blobs::Column;
    use crate::memory::answer_buffers;
    const COLUMNS: [Column; 3] = [Column::Template, Column::Description, Column::Icon];
    let mut blobs = c.blobs();
    let lens = [
        blobs.seek(c, Column::Template, bundle_id)?,
        blobs.seek(c, Column::Description, parts)?,
        blobs.seek(c, Column::Icon, parts)?,
    ];
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
