//! The workspace's record of where each blob was sent (`placements.tsv`: registry, digest and
//! repository, one blob a line), appended after each image, so that a rerun after `kill -9`
//! mounts a blob another repository of the destination holds instead of uploading it again.
//! A line that does not parse is skipped: the worst a damaged record costs is an upload.

use crate::image::copy::Placement;
use std::io::Write;
use std::path::Path;

/// The placements recorded at `path` (none when it does not exist).
pub fn read(path: &Path) -> Vec<Placement> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
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
        })
        .collect()
}

/// Appends `new` to the record at `path`, each line written whole.
pub fn append(path: &Path, new: &[Placement]) -> std::io::Result<()> {
    if new.is_empty() {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = String::new();
    for p in new {
        text.push_str(&format!("{}\t{}\t{}\n", p.registry, p.digest, p.repository));
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(read(&path), vec![p]);
        assert!(read(&dir.path().join("missing")).is_empty());
    }
}
