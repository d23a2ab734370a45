//! How the workspace's append-only records (`completed.tsv`, `placements.tsv`) grow: whole
//! lines appended in one write, and a last line a crash left torn is ended first, so that it
//! stays one bad line (skipped by the readers) and never swallows the next good one.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Appends `lines` (each ending in `\n`) to the record at `path`, creating it and its
/// directory.
pub fn append(path: &Path, lines: &str) -> std::io::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    let mut text = String::new();
    if f.metadata()?.len() > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::End(-1))?;
        f.read_exact(&mut last)?;
        if last[0] != b'\n' {
            text.push('\n');
        }
    }
    text.push_str(lines);
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_torn_last_line_is_ended_before_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r/x.tsv");
        super::append(&p, "a\n").unwrap();
        std::fs::write(&p, "a\ntorn").unwrap();
        super::append(&p, "b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a\ntorn\nb\n");
    }
}
