//! The workspace's record of where each blob was sent (`placements.tsv`: registry, digest and
//! repository, one blob a line), appended after each image, so that a rerun after `kill -9`
//! mounts a blob another repository of the destination holds instead of uploading it again.
//! A line that does not parse is skipped: the worst a damaged record costs is an upload.

use crate::image::copy::Placement;
use std::path::Path;

/// The digest field of a line that forgets every placement in a repository (images were
/// deleted from it, so its blobs may be gone).
const FORGET: &str = "-";

/// The placements recorded at `path` (none when it does not exist), less those a later line
/// forgets.
pub fn read(path: &Path) -> Vec<Placement> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out: Vec<Placement> = Vec::new();
    for l in text.lines() {
        let mut f = l.split('\t');
        if let (Some(registry), Some(FORGET), Some(repository), None) =
            (f.next(), f.next(), f.next(), f.next())
        {
            out.retain(|p| p.registry != registry || p.repository != repository);
            continue;
        }
        out.extend(parse(l));
    }
    out
}

/// Appends a line forgetting every placement in `registry`'s `repository`.
pub fn forget(path: &Path, registry: &str, repository: &str) -> std::io::Result<()> {
    super::record::append(path, &format!("{registry}\t{FORGET}\t{repository}\n"))
}

/// One line of the record.
fn parse(l: &str) -> Option<Placement> {
    let mut f = l.split('\t');
    let (registry, digest, repository) = (f.next()?, f.next()?, f.next()?);
    let ok = f.next().is_none()
        && crate::digest::is_valid(digest)
        && !registry.is_empty()
        && !repository.is_empty();
    ok.then(|| Placement {
        registry: registry.into(),
        digest: digest.into(),
        repository: repository.into(),
    })
}

/// Appends `new` to the record at `path`, each line written whole.
pub fn append(path: &Path, new: &[Placement]) -> std::io::Result<()> {
    let mut text = String::new();
    for p in new {
        text.push_str(&format!("{}\t{}\t{}\n", p.registry, p.digest, p.repository));
    }
    super::record::append(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn placements_survive_a_round_trip_and_bad_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ws/placements.tsv");
        let d = format!("sha256:{}", "a".repeat(64));
        let p = Placement {
            registry: "m:5000".into(),
            digest: d.clone(),
            repository: "ns/app".into(),
        };
        append(&path, std::slice::from_ref(&p)).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"garbage\nm:5000\tsha256:zz\tns/x\nm:5000\t")
            .unwrap();
        assert_eq!(read(&path), vec![p.clone()]);
        assert!(read(&dir.path().join("missing")).is_empty());
        forget(&path, "m:5000", "ns/other").unwrap();
        assert_eq!(read(&path), vec![p.clone()]);
        forget(&path, "m:5000", "ns/app").unwrap();
        assert!(read(&path).is_empty());
        append(&path, std::slice::from_ref(&p)).unwrap();
        assert_eq!(read(&path), vec![p]);
    }
}
