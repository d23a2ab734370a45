//! Reading a bundle's large text columns (its CSV template and its package's description and
//! icon) with SQLite's incremental blob I/O, straight into the buffer the answer is sent from.
//!
//! Read as a result column, such a value is first assembled by SQLite in a buffer of its own
//! (one allocation of the value's size, freshly faulted in on a loaded server) and then copied
//! into the answer. A blob handle reads the same pages into memory the caller gives it. The
//! handles are opened once per pooled connection and moved from row to row
//! (`sqlite3_blob_reopen`, a rowid seek), since opening one compiles a statement.

use rusqlite::{ffi, Connection};
use std::ffi::CStr;
use std::mem::MaybeUninit;

/// The columns read this way.
#[derive(Clone, Copy)]
pub enum Column {
    /// `bundle.csv_template`, by the bundle's rowid.
    Template,
    /// `package_csv.description`, by `bundle.csv_parts`.
    Description,
    /// `package_csv.icon`, by `bundle.csv_parts`.
    Icon,
}

impl Column {
    fn names(self) -> (&'static CStr, &'static CStr) {
        match self {
            Column::Template => (c"bundle", c"csv_template"),
            Column::Description => (c"package_csv", c"description"),
            Column::Icon => (c"package_csv", c"icon"),
        }
    }
}

/// One connection's read-only blob handles, one per [`Column`], opened on first use. They
/// must be closed before their connection is ([`Drop`] does; a pooled connection holds them
/// in a field declared before the connection).
pub struct Blobs {
    handles: [*mut ffi::sqlite3_blob; 3],
}

// SAFETY: a handle is only used together with its connection, which moves between threads
// with it (never shared); SQLite's default threading mode allows that.
unsafe impl Send for Blobs {}

impl Default for Blobs {
    fn default() -> Self {
        Blobs {
            handles: [std::ptr::null_mut(); 3],
        }
    }
}

impl Blobs {
    /// Points the handle for `col` at row `rowid` of `conn` and returns the value's length in
    /// bytes. `conn` must be the connection these handles were first opened on.
    pub fn seek(&mut self, conn: &Connection, col: Column, rowid: i64) -> rusqlite::Result<usize> {
        let h = &mut self.handles[col as usize];
        // SAFETY: `conn` is open and is the handles' connection; `h` is null or a live handle
        // of it. A failed open leaves it null; a failed reopen aborts it, so it is closed.
        let rc = unsafe {
            let db = conn.handle();
            if h.is_null() {
                let (table, column) = col.names();
                ffi::sqlite3_blob_open(
                    db,
                    c"main".as_ptr(),
                    table.as_ptr(),
                    column.as_ptr(),
                    rowid,
                    0,
                    h,
                )
            } else {
                ffi::sqlite3_blob_reopen(*h, rowid)
            }
        };
        if rc != ffi::SQLITE_OK {
            let err = error(conn, rc);
            self.close(col);
            return Err(err);
        }
        // SAFETY: a live handle.
        Ok(unsafe { ffi::sqlite3_blob_bytes(self.handles[col as usize]) }.max(0) as usize)
    }

    /// Reads the whole value [`Blobs::seek`] last pointed `col` at into `dst`, which must be
    /// exactly its length. An empty `dst` reads nothing and needs no seek.
    pub fn read(
        &mut self,
        conn: &Connection,
        col: Column,
        dst: &mut [MaybeUninit<u8>],
    ) -> rusqlite::Result<()> {
        let h = self.handles[col as usize];
        if dst.is_empty() {
            return Ok(());
        }
        // SAFETY: `h` was positioned by `seek` (a null handle makes SQLite return an error);
        // `dst` is writable for its length, which is at most the value's.
        let rc = unsafe { ffi::sqlite3_blob_read(h, dst.as_mut_ptr().cast(), dst.len() as i32, 0) };
        match rc {
            ffi::SQLITE_OK => Ok(()),
            rc => {
                let err = error(conn, rc);
                self.close(col);
                Err(err)
            }
        }
    }

    fn close(&mut self, col: Column) {
        let h = std::mem::replace(&mut self.handles[col as usize], std::ptr::null_mut());
        if !h.is_null() {
            // SAFETY: a live handle, forgotten here.
            unsafe { ffi::sqlite3_blob_close(h) };
        }
    }
}

impl Drop for Blobs {
    fn drop(&mut self) {
        for col in [Column::Template, Column::Description, Column::Icon] {
            self.close(col);
        }
    }
}

/// rusqlite's error for a failed call on `conn`, with SQLite's message.
fn error(conn: &Connection, rc: i32) -> rusqlite::Error {
    // SAFETY: `conn` is open; the message is copied before any other call on it.
    let msg = unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(conn.handle())) };
    rusqlite::Error::SqliteFailure(
        ffi::Error::new(rc),
        Some(msg.to_string_lossy().into_owned()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handle that failed (here: a rowid with no row) is closed and opened again by the
    /// next seek, which then reads what a query reads; an aborted handle would fail it.
    #[test]
    fn a_failed_seek_leaves_the_column_readable() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::demo_store(dir.path());
        let c = store.conn().unwrap();
        let (id, want): (i64, String) = c
            .query_row(
                "SELECT id, csv_template FROM bundle WHERE csv_template IS NOT NULL LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let mut blobs = c.blobs();
        blobs.seek(&c, Column::Template, id).unwrap();
        assert!(blobs.seek(&c, Column::Template, i64::MAX).is_err());
        let len = blobs.seek(&c, Column::Template, id).unwrap();
        assert_eq!(len, want.len());
        let mut buf = Vec::with_capacity(len);
        blobs
            .read(&c, Column::Template, &mut buf.spare_capacity_mut()[..len])
            .unwrap();
        // SAFETY: `read` filled `len` bytes.
        unsafe { buf.set_len(len) };
        assert_eq!(buf, want.as_bytes());
    }
}
