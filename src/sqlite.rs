//! Opening SQLite files that opreg only reads: its own built databases and upstream indexes.
//! One way to open them (read-only, immutable, `query_only`) and one header check, so both
//! readers refuse a damaged or truncated file with the same words.

use anyhow::{bail, Context, Result};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// The first 16 bytes of every SQLite database file.
pub const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Opens `path` read-only and immutable (SQLite takes no locks and never writes a journal),
/// with `query_only` set. The path is passed as a URI of its bytes: `%`, `?`, `#` and every
/// byte outside printable ASCII are percent-escaped, so any path (not UTF-8 too) opens.
pub fn open_read_only(path: &Path) -> Result<Connection> {
    let mut uri = String::from("file:");
    for &b in path_bytes(path).iter() {
        match b {
            b'%' | b'?' | b'#' => uri.push_str(&format!("%{b:02x}")),
            0x21..=0x7e => uri.push(b as char),
            _ => uri.push_str(&format!("%{b:02x}")),
        }
    }
    uri.push_str("?immutable=1");
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("cannot open {}", path.display()))?;
    conn.execute_batch("PRAGMA query_only = ON;")?;
    Ok(conn)
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(path.as_os_str().as_bytes())
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> std::borrow::Cow<'_, [u8]> {
    std::borrow::Cow::Owned(path.to_string_lossy().into_owned().into_bytes())
}

/// Checks the 100-byte SQLite header against the file: the magic string, a valid page size,
/// and a file at least as long as the page count the header records (when SQLite marks that
/// count valid), so that a truncated copy is refused without reading the rest.
pub fn check_header(path: &Path) -> Result<()> {
    use std::io::Read;
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let len = f.metadata()?.len();
    let mut h = [0u8; 100];
    if len < 100 || f.read_exact(&mut h).is_err() || &h[..16] != MAGIC {
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

/// Checks the header, then opens the file ([`check_header`], [`open_read_only`]).
pub fn open_checked(path: &Path) -> Result<Connection> {
    check_header(path)?;
    open_read_only(path)
}

/// True when the database has a table of that name.
pub fn table_exists(conn: &Connection, table: &str) -> Result<bool> {
    Ok(conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get::<_, i64>(0),
    )? > 0)
}
