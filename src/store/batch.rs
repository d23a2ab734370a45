//! Inserting many small rows through multi-row `INSERT` statements, and the bundle rows a
//! [`super::build::Builder`] holds until a batch is full.

use anyhow::Result;
use rusqlite::Connection;

/// Runs `head` (an `INSERT` up to its `VALUES`) for every row of `rows`, [`BATCH_ROWS`] rows to
/// a statement and the rest one at a time: for rows this small, running a statement costs more
/// than inserting the row.
pub(super) fn insert_rows<const N: usize>(
    conn: &Connection,
    head: &str,
    rows: &[[&dyn rusqlite::ToSql; N]],
) -> Result<()> {
    let tuple = format!("({})", ["?"; N].join(", "));
    let run = |sql: String, rows: &[[&dyn rusqlite::ToSql; N]]| -> Result<()> {
        let mut stmt = conn.prepare_cached(&sql)?;
        for (i, v) in rows.iter().flatten().enumerate() {
            stmt.raw_bind_parameter(i + 1, v)?;
        }
        stmt.raw_execute()?;
        Ok(())
    };
    let mut batches = rows.chunks_exact(BATCH_ROWS);
    for batch in &mut batches {
        run(
            format!(
                "{head} VALUES {}",
                vec![tuple.as_str(); BATCH_ROWS].join(", ")
            ),
            batch,
        )?;
    }
    for row in batches.remainder() {
        run(format!("{head} VALUES {tuple}"), std::slice::from_ref(row))?;
    }
    Ok(())
}

/// Rows of written bundles not yet inserted, which go [`BATCH_ROWS`] to a statement, and the
/// `package_csv` id of each package met so far (one upsert per package, not per bundle).
///
/// `bundle_property` is keyed by (bundle id, seq) without a rowid, and a CSV's metadata
/// overflows its page: SQLite reads every overflowing record it compares a new key with, whole,
/// and a statement starts each search from the root. Within one statement the rows after a
/// small one are appended after a single comparison with the last row.
#[derive(Default)]
pub(super) struct BundleRows {
    /// (bundle id, seq, type, value)
    pub props: Vec<(i64, i64, String, String)>,
    /// (group, version, kind, bundle id) of `olm.gvk` properties
    pub apis: Vec<(String, String, String, i64)>,
    pub csv_ids: std::collections::HashMap<String, i64>,
}

impl BundleRows {
    /// Writes the pending rows in whole batches, or all of them when `all` is set.
    pub fn write(&mut self, conn: &Connection, all: bool) -> Result<()> {
        flush(
            conn,
            "INSERT INTO bundle_property (bundle_id, seq, type, value)",
            &mut self.props,
            all,
            |(id, seq, t, v)| [id, seq, t, v],
        )?;
        flush(
            conn,
            "INSERT OR IGNORE INTO provided_api (api_group, version, kind, bundle_id)",
            &mut self.apis,
            all,
            |(g, v, k, id)| [g, v, k, id],
        )
    }
}

/// Inserts the whole batches of `pending` (all of it when `all` is set) with [`insert_rows`]
/// and removes them.
fn flush<T, const N: usize>(
    conn: &Connection,
    head: &str,
    pending: &mut Vec<T>,
    all: bool,
    row: impl Fn(&T) -> [&dyn rusqlite::ToSql; N],
) -> Result<()> {
    let upto = if all {
        pending.len()
    } else {
        pending.len() - pending.len() % BATCH_ROWS
    };
    if upto == 0 {
        return Ok(());
    }
    let rows: Vec<[&dyn rusqlite::ToSql; N]> = pending[..upto].iter().map(row).collect();
    insert_rows(conn, head, &rows)?;
    drop(rows);
    pending.drain(..upto);
    Ok(())
}

/// Rows per statement in [`insert_rows`].
const BATCH_ROWS: usize = 64;
