//! A mirror on disk (`file://DIR`): DIR is an OCI image layout (`oci-layout`, one `index.json`,
//! `blobs/sha256/…`) holding every image by its source name and each rebuilt catalog by its
//! target path and tag, beside the configuration as given (`imageset-config.yaml`), the plan
//! (`plan.json`), the listing a disk-to-mirror run works from (`mirror.json`), and the history
//! of what each run added ([`super::history`]).
//!
//! For the sneakernet, DIR packs into `mirror_000001.tar`, … ([`super::archive`]): the blobs a
//! run added (or every run since a date) and the small files, so that archives unpacked in order
//! over an earlier mirror's DIR give the whole layout.

use super::config::ImageSetConfiguration;
use super::deps::Added;
use super::history::{self, Date};
use super::images::Wanted;
use super::plan::{self, Plan, PlannedCatalog, PlannedImage};
use super::MirrorError;
use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The listing's file name.
pub const LISTING: &str = "mirror.json";
/// The configuration, as given.
pub const CONFIG: &str = "imageset-config.yaml";
/// The small files every archive carries, when they exist.
const SMALL_FILES: [&str; 8] = [
    "oci-layout",
    "index.json",
    LISTING,
    CONFIG,
    "plan.json",
    "mapping.txt",
    "results.json",
    history::FILE,
];
const VERSION: u32 = 1;

/// What a disk-to-mirror run pushes: the catalogs and the images, as the mirror to disk planned
/// them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Listing {
    pub version: u32,
    pub catalogs: Vec<Catalog>,
    pub images: Vec<Wanted>,
    pub blocked: Vec<String>,
}

/// One rebuilt catalog in the layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Catalog {
    /// Its entry in the configuration's `mirror.operators`.
    pub entry: usize,
    /// The source catalog, pinned.
    pub pinned: String,
    pub digest: String,
    /// The rebuilt image's name in the layout, and its digest.
    pub name: String,
    pub rebuilt: String,
    pub bundles_in_source: usize,
    pub kept: BTreeMap<String, BTreeSet<String>>,
    pub added: Vec<Added>,
    pub warnings: Vec<String>,
}

/// The listing of a mirror to disk: `plan`, and each catalog's rebuilt digest (in order).
pub fn listing(plan: &Plan, rebuilt: &[String]) -> Listing {
    Listing {
        version: VERSION,
        catalogs: plan
            .catalogs
            .iter()
            .zip(rebuilt)
            .enumerate()
            .map(|(entry, (c, digest))| Catalog {
                entry,
                pinned: c.pinned.clone(),
                digest: c.digest.clone(),
                name: c.destination.clone(),
                rebuilt: digest.clone(),
                bundles_in_source: c.bundles_in_source,
                kept: c.kept.clone(),
                added: c.added.clone(),
                warnings: c.warnings.clone(),
            })
            .collect(),
        images: plan.images.iter().map(|i| i.wanted.clone()).collect(),
        blocked: plan.blocked.clone(),
    }
}

/// Reads DIR's configuration and listing; the error names the file and says what DIR lacks.
pub fn read(dir: &Path) -> Result<(ImageSetConfiguration, Listing), Error> {
    let lacking = |what: &str, e: std::io::Error| {
        Error::Usage(format!(
            "{}: {e}; {} does not hold a mirror to disk ({what})",
            dir.join(what).display(),
            dir.display()
        ))
    };
    let config = std::fs::read_to_string(dir.join(CONFIG)).map_err(|e| lacking(CONFIG, e))?;
    let cfg = super::config::parse(&config).map_err(|e| {
        Error::Usage(format!(
            "{}: {}",
            dir.join(CONFIG).display(),
            crate::text::one_line(e)
        ))
    })?;
    let text = std::fs::read(dir.join(LISTING)).map_err(|e| lacking(LISTING, e))?;
    let l = parse_listing(&text, cfg.mirror.operators.len())
        .map_err(|e| Error::Usage(format!("{}: {e}", dir.join(LISTING).display())))?;
    Ok((cfg, l))
}

/// Parses a listing and checks it against a configuration of `operators` catalog entries.
pub fn parse_listing(text: &[u8], operators: usize) -> Result<Listing, MirrorError> {
    let l: Listing = serde_json::from_slice(text).map_err(|e| MirrorError::from(e.to_string()))?;
    if l.version != VERSION {
        return Err(MirrorError::from(format!(
            "version {} (this opreg reads version {VERSION})",
            l.version
        )));
    }
    if let Some(c) = l.catalogs.iter().find(|c| c.entry >= operators) {
        return Err(MirrorError::from(format!(
            "catalog {} has no entry in {CONFIG}",
            c.pinned
        )));
    }
    Ok(l)
}

/// The plan a disk-to-mirror run carries out: the listing's catalogs and images, named at
/// `dest` (`REGISTRY[/PREFIX]`). With each catalog, its name in the layout.
pub fn plan(
    cfg: &ImageSetConfiguration,
    l: &Listing,
    dest: &str,
    max_nested: usize,
) -> Result<(Plan, Vec<String>), Error> {
    let mut out = Plan {
        blocked: l.blocked.clone(),
        ..Default::default()
    };
    let mut names = Vec::new();
    for c in &l.catalogs {
        let entry = cfg.mirror.operators[c.entry].clone();
        out.catalogs.push(PlannedCatalog {
            destination: plan::catalog_destination(&entry, &c.digest, dest, max_nested)?,
            entry,
            pinned: c.pinned.clone(),
            digest: c.digest.clone(),
            configs_path: String::new(),
            catalog: Default::default(),
            bundles_in_source: c.bundles_in_source,
            kept: c.kept.clone(),
            added: c.added.clone(),
            why: Default::default(),
            warnings: c.warnings.clone(),
        });
        names.push(c.name.clone());
    }
    for w in &l.images {
        out.images.push(PlannedImage {
            destination: plan::image_destination(w, dest, max_nested)?,
            wanted: w.clone(),
        });
    }
    Ok((out, names))
}

/// DIR's history with this run: every blob no earlier run recorded. Not written: the caller
/// writes it ([`history::write`]) once the archives holding those blobs are complete, so that
/// a run that failed or was killed before (a full disk, Ctrl-C) leaves its blobs to the next.
pub fn with_this_run(dir: &Path) -> Result<history::History, MirrorError> {
    let h = history::read(dir)?;
    let known: BTreeSet<&PathBuf> = h.runs.iter().flat_map(|r| &r.added).collect();
    let added: Vec<PathBuf> = history::blobs(dir)?
        .into_iter()
        .filter(|b| !known.contains(b))
        .collect();
    history::with_run(h, &added, std::time::SystemTime::now())
}

/// Packs into DIR's archives what the last run added (or every run since `since`), with the
/// small files, in archives of at most `archive_gb` GB each (no limit: one archive).
pub fn pack(
    dir: &Path,
    h: &history::History,
    since: Option<&Date>,
    archive_gb: Option<u64>,
) -> Result<Vec<PathBuf>, MirrorError> {
    let mut files = history::added_since(h, since);
    files.extend(
        SMALL_FILES
            .iter()
            .map(PathBuf::from)
            .filter(|f| dir.join(f).is_file()),
    );
    let max = archive_gb.map_or(u64::MAX, |gb| gb.saturating_mul(1 << 30));
    super::archive::pack(dir, &files, dir, max)
}

/// DIR's archives (`mirror_000001.tar`, …), in order.
pub fn archives(dir: &Path) -> Result<Vec<PathBuf>, MirrorError> {
    let list =
        std::fs::read_dir(dir).map_err(|e| MirrorError::from(format!("{}: {e}", dir.display())))?;
    let mut out: Vec<PathBuf> = list
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("mirror_")?.strip_suffix(".tar"))
                .is_some_and(|n| n.len() == 6 && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_is_planned_at_the_destination_and_checked_against_the_configuration() {
        let seed = include_bytes!("../../fuzz/seeds/mirror_listing/one_catalog.json");
        let l = parse_listing(seed, 1).unwrap();
        let mut cfg = ImageSetConfiguration::default();
        cfg.mirror.operators.push(super::super::config::Operator {
            catalog: "registry.example.com/catalogs/operators:v1".into(),
            ..Default::default()
        });
        let (p, names) = plan(&cfg, &l, "mirror.example.com:5000/m", 0).unwrap();
        assert_eq!(names, ["catalogs/operators:v1"]);
        assert_eq!(
            p.catalogs[0].destination,
            "mirror.example.com:5000/m/catalogs/operators:v1"
        );
        let dests: Vec<&str> = p.images.iter().map(|i| i.destination.as_str()).collect();
        assert_eq!(
            dests,
            [
                "mirror.example.com:5000/m/etcd/etcd-bundle@sha256:3333333333333333333333333333333333333333333333333333333333333333",
                "mirror.example.com:5000/m/mirrored/ubi:nine",
            ]
        );
        // Written back, it reads the same.
        let again = serde_json::to_vec(&listing(
            &p,
            &["sha256:2222222222222222222222222222222222222222222222222222222222222222".into()],
        ))
        .unwrap();
        let mut back = parse_listing(&again, 1).unwrap();
        back.catalogs[0].name = l.catalogs[0].name.clone();
        assert_eq!(back.images, l.images);
        let e = parse_listing(seed, 0).unwrap_err().to_string();
        assert!(e.contains("has no entry"), "{e}");
        let e = parse_listing(
            br#"{"version":2,"catalogs":[],"images":[],"blocked":[]}"#,
            0,
        );
        assert!(e.unwrap_err().to_string().contains("version 2"));
    }

    #[test]
    fn archives_are_listed_in_order_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        for n in [
            "mirror_000002.tar",
            "mirror_000001.tar",
            "mirror_1.tar",
            "x.tar",
            "mirror_000003.tar.tmp",
        ] {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        let names: Vec<String> = archives(dir.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["mirror_000001.tar", "mirror_000002.tar"]);
    }

    #[test]
    fn a_directory_without_a_mirror_is_one_line_naming_what_it_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains(CONFIG) && e.contains("does not hold a mirror to disk"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn a_run_records_the_blobs_no_earlier_run_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = dir.path().join("blobs/sha256");
        std::fs::create_dir_all(&blobs).unwrap();
        std::fs::write(blobs.join("aa"), b"1").unwrap();
        let record = |d: &Path| {
            let h = with_this_run(d)?;
            history::write(d, &h)?;
            Ok::<_, MirrorError>(h)
        };
        // Not written until the caller says so (its archives complete).
        let pending = with_this_run(dir.path()).unwrap();
        assert_eq!(pending.runs[0].added, [PathBuf::from("blobs/sha256/aa")]);
        assert!(history::read(dir.path()).unwrap().runs.is_empty());
        let h = record(dir.path()).unwrap();
        assert_eq!(h.runs[0].added, [PathBuf::from("blobs/sha256/aa")]);
        // A killed run's blob, then a finished run's: both are the second record's.
        std::fs::write(blobs.join("bb"), b"2").unwrap();
        std::fs::write(blobs.join("cc"), b"3").unwrap();
        let h = record(dir.path()).unwrap();
        assert_eq!(
            h.runs[1].added,
            [
                PathBuf::from("blobs/sha256/bb"),
                PathBuf::from("blobs/sha256/cc")
            ]
        );
    }
}
