//! The workspace's record of the images runs completed at a registry (`completed.tsv`: the
//! destination by tag, the digest, and an index's platform digests, one image a line), appended
//! as each image completes with its signatures. A rerun takes an image the record holds, with
//! the digest its source names now, as there: it does not ask the destination about it again,
//! so a rerun with nothing new asks each source once or twice per image and the destination
//! nothing. An image deleted at the destination since is therefore not copied again until the
//! record is removed (documented in docs/mirror.md). A line that does not parse is skipped: the
//! worst a damaged record costs is a question to the destination.

use std::collections::HashMap;
use std::path::Path;

/// The record's file name in the workspace.
pub const FILE: &str = "completed.tsv";

/// The images recorded: (destination, digest) to the platform digests of an index.
pub type Completed = HashMap<(String, String), Vec<String>>;

/// The fourth field of a line that takes an image out of the record (it was deleted).
const GONE: &str = "deleted";

/// The record at `path` (empty when it does not exist). A line marking an image deleted takes
/// it out.
pub fn read(path: &Path) -> Completed {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = Completed::new();
    for l in text.lines() {
        let mut f = l.split('\t');
        if let (Some(d), Some(digest), Some(""), Some(GONE), None) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        {
            out.remove(&(d.to_string(), digest.to_string()));
            continue;
        }
        out.extend(parse(l));
    }
    out
}

/// One line of the record.
fn parse(l: &str) -> Option<((String, String), Vec<String>)> {
    let mut f = l.split('\t');
    let (destination, digest, children) = (f.next()?, f.next()?, f.next()?);
    let children: Vec<String> = children
        .split(',')
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect();
    let ok = f.next().is_none()
        && !destination.is_empty()
        && crate::digest::is_valid(digest)
        && children.iter().all(|c| crate::digest::is_valid(c));
    ok.then(|| ((destination.to_string(), digest.to_string()), children))
}

/// Appends a line taking the image out of the record at `path` (it was deleted), so that a
/// later run asks the destination about it again and copies it if asked.
pub fn append_gone(path: &Path, destination: &str, digest: &str) -> std::io::Result<()> {
    append_line(path, &format!("{destination}\t{digest}\t\t{GONE}\n"))
}

/// Appends an image to the record at `path`, its line written whole.
pub fn append(
    path: &Path,
    destination: &str,
    digest: &str,
    children: &[String],
) -> std::io::Result<()> {
    let line = format!("{destination}\t{digest}\t{}\n", children.join(","));
    append_line(path, &line)
}

fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    super::record::append(path, line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn images_survive_a_round_trip_and_bad_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ws").join(FILE);
        let (a, b) = (
            format!("sha256:{}", "a".repeat(64)),
            format!("sha256:{}", "b".repeat(64)),
        );
        append(&path, "m:5000/ns/app:v1", &a, &[]).unwrap();
        append(&path, "m:5000/ns/multi:v1", &b, std::slice::from_ref(&a)).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"garbage\nm:5000/x:1\tsha256:zz\t\nm:5000/y:1\t")
            .unwrap();
        let r = read(&path);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[&("m:5000/ns/app:v1".into(), a.clone())],
            Vec::<String>::new()
        );
        assert_eq!(r[&("m:5000/ns/multi:v1".into(), b)], vec![a.clone()]);
        assert!(read(&dir.path().join("missing")).is_empty());
        append_gone(&path, "m:5000/ns/app:v1", &a).unwrap();
        let r = read(&path);
        assert_eq!(r.len(), 1);
        assert!(!r.contains_key(&("m:5000/ns/app:v1".into(), a.clone())));
        // Copied again later: recorded again.
        append(&path, "m:5000/ns/app:v1", &a, &[]).unwrap();
        assert_eq!(read(&path).len(), 2);
    }
}
