//! Phase 2 at a registry: the destination probed with a DELETE it cannot honour, catalogs
//! rebuilt on their own image and pushed to the same tag (the superseded manifest deleted
//! after), images deleted by digest (an index with the platform images no other image of the
//! repository uses), signatures by their tags and the referrers API, and the workspace's
//! records (`standing.json`, `completed.tsv`, `placements.tsv`) updated as each goes.

use super::execute::{Gone, Target};
use super::list::Checked;
use super::Change;
use crate::error::Error;
use crate::image::reference::Reference;
use crate::mirror::standing::Standing;
use crate::registry::{BlobSource, Deleted, Registry};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A registry as phase 2's target, with the workspace whose records it updates.
pub struct AtRegistry {
    workspace: PathBuf,
    image: crate::image::ImageOptions,
    records: Records,
    completed: crate::mirror::completed::Completed,
}

impl AtRegistry {
    pub fn new(workspace: &Path, image: crate::image::ImageOptions) -> AtRegistry {
        let records = Records::new(workspace);
        let completed = crate::mirror::completed::read(&records.completed);
        AtRegistry {
            workspace: workspace.to_path_buf(),
            image,
            records,
            completed,
        }
    }
}

impl Target for AtRegistry {
    fn probe(&mut self, first: Option<&Checked>, changes: &[Change]) -> Result<(), Error> {
        // The registry is asked on the first image's reference, else the first catalog's.
        let at = match (first, changes.first()) {
            (Some(c), _) => c.reference.clone(),
            (None, Some(ch)) => crate::image::reference::parse(&ch.destination)
                .map_err(|e| Error::Usage(e.to_string()))?,
            (None, None) => return Ok(()),
        };
        Registry::new(&at, &self.image.connection)
            .and_then(|mut r| r.probe_delete())
            .map_err(|e| Error::failed(crate::text::one_line(&e)))
    }

    fn rebuild(&mut self, ch: &Change, standing: &Standing) -> Result<Option<String>, Error> {
        rebuild_one(ch, standing, &self.image)
    }

    fn delete(
        &mut self,
        c: &Checked,
        recorded: Option<&str>,
        in_use: &BTreeSet<String>,
    ) -> anyhow::Result<Gone> {
        delete_one(&c.reference, recorded, in_use, &self.image.connection)
    }

    fn in_use(&self, standing: &Standing, name: &str) -> BTreeSet<String> {
        in_use(standing, &self.completed, name)
    }

    fn forget(&mut self, c: &Checked, digest: &str) {
        self.records.gone(&c.name, digest, &c.reference);
    }

    fn signatures(&mut self, c: &Checked, digests: &[String]) -> anyhow::Result<usize> {
        delete_signatures(&c.reference, digests, &self.image.connection)
    }

    fn record(&mut self, standing: &Standing) -> Result<(), Error> {
        standing
            .write(&self.workspace)
            .map_err(|e| Error::failed(e.to_string()))
    }
}

/// The digests other images standing in `dest`'s repository use: their own and, for an
/// index, its platform images' (from the record of completed images).
fn in_use(
    standing: &Standing,
    completed: &crate::mirror::completed::Completed,
    dest: &str,
) -> BTreeSet<String> {
    let repo = crate::mirror::standing::repository_of(dest);
    let mut out = BTreeSet::new();
    for (d, img) in &standing.images {
        if d == dest || crate::mirror::standing::repository_of(d) != repo {
            continue;
        }
        out.insert(img.digest.clone());
        if let Some(children) = completed.get(&(d.clone(), img.digest.clone())) {
            out.extend(children.iter().cloned());
        }
    }
    out
}

/// Deletes the image `r` (resolving a tag to its digest first), and the platform images of an
/// index that no other image of the repository uses (`in_use`).
fn delete_one(
    r: &Reference,
    recorded: Option<&str>,
    in_use: &BTreeSet<String>,
    conn: &crate::registry::Connection,
) -> anyhow::Result<Gone> {
    let mut reg = Registry::new(r, conn)?;
    let at = r
        .digest
        .clone()
        .or_else(|| r.tag.clone())
        .unwrap_or_default();
    let Some(m) = reg.manifest_if_any(&at, crate::image::DEFAULT_MAX_MANIFEST_SIZE)? else {
        return Ok(Gone::Already);
    };
    let digest = m
        .digest
        .clone()
        .unwrap_or_else(|| crate::digest::sha256(&m.bytes));
    if recorded.is_some_and(|rec| rec != digest) {
        return Ok(Gone::Moved(digest));
    }
    let children: Vec<String> =
        match crate::oci::manifest::parse_manifest(&m.bytes, m.content_type.as_deref()) {
            Ok(crate::oci::manifest::Manifest::Index { manifests, .. }) => {
                manifests.into_iter().map(|d| d.digest).collect()
            }
            _ => Vec::new(),
        };
    if reg.delete_manifest(&digest)? == Deleted::AlreadyGone {
        return Ok(Gone::Already);
    }
    for child in children.iter().filter(|c| !in_use.contains(*c)) {
        reg.delete_manifest(child)?;
    }
    let mut all = vec![digest];
    all.extend(children);
    Ok(Gone::Now(all))
}

/// Deletes the signatures, attestations, SBOMs and referrers of `digests` in `r`'s repository;
/// returns how many manifests went.
fn delete_signatures(
    r: &Reference,
    digests: &[String],
    conn: &crate::registry::Connection,
) -> anyhow::Result<usize> {
    let mut reg = Registry::new(r, conn)?;
    let limit = crate::image::DEFAULT_MAX_MANIFEST_SIZE;
    let mut n = 0;
    for d in digests {
        let base = crate::digest::tag_form(d);
        let mut found = Vec::new();
        for suffix in [".sig", ".att", ".sbom", ""] {
            if let Some(m) = reg.manifest_if_any(&format!("{base}{suffix}"), limit)? {
                found.push(m.digest.unwrap_or_else(|| crate::digest::sha256(&m.bytes)));
            }
        }
        if let Some(bytes) = reg.get_if_any(&format!("referrers/{d}"), limit)? {
            if let Ok(crate::oci::manifest::Manifest::Index { manifests, .. }) =
                crate::oci::manifest::parse_manifest(&bytes, None)
            {
                found.extend(manifests.into_iter().map(|m| m.digest));
            }
        }
        for f in found {
            if reg.delete_manifest(&f)? == Deleted::Now {
                n += 1;
            }
        }
    }
    Ok(n)
}

/// Rebuilds one catalog; the digest pushed, if one was. The manifest it superseded (or
/// one an interrupted run left) is deleted after the push, unless another catalog or image
/// the workspace keeps in the same repository has that digest (a DELETE would take its tag).
fn rebuild_one(
    ch: &Change,
    standing: &Standing,
    image: &crate::image::ImageOptions,
) -> Result<Option<String>, Error> {
    let r: Reference =
        crate::image::reference::parse(&ch.destination).map_err(|e| Error::Usage(e.to_string()))?;
    let conn = &image.connection;
    let current = Registry::new(&r, conn)
        .and_then(|mut reg| {
            let at = r
                .tag
                .clone()
                .or_else(|| r.digest.clone())
                .unwrap_or_default();
            reg.manifest_if_any(&at, crate::image::DEFAULT_MAX_MANIFEST_SIZE)
        })
        .map_err(|e| Error::failed(crate::text::one_line(&e)))?
        .map(|m| m.digest.unwrap_or_else(|| crate::digest::sha256(&m.bytes)))
        .ok_or_else(|| {
            Error::failed(format!(
                "the catalog {} is not at the destination",
                ch.destination
            ))
        })?;
    let rebuilt = super::catalogs::rebuild(ch, &current, image)?;
    let superseded = match &rebuilt.digest {
        Some(new) if *new != current => Some(current.clone()),
        Some(_) => None,
        None if current != ch.digest => Some(ch.digest.clone()),
        None => None,
    };
    let shared = |old: &str| standing.sharing(&ch.destination, old, &|_| false).is_some();
    if let Some(old) = superseded.filter(|o| !shared(o)) {
        Registry::new(&r, conn)
            .and_then(|mut reg| reg.delete_manifest(&old))
            .map_err(|e| Error::failed(crate::text::one_line(&e)))?;
    }
    Ok(rebuilt.digest)
}

/// The workspace's append-only records, updated as each image goes.
struct Records {
    completed: PathBuf,
    placements: PathBuf,
}

impl Records {
    fn new(workspace: &Path) -> Records {
        Records {
            completed: workspace.join(crate::mirror::completed::FILE),
            placements: workspace.join("placements.tsv"),
        }
    }

    /// The image at `dest` is gone: the record of completed images forgets it (a later run
    /// copies it again), and no blob is mounted from its repository on a placement's word.
    fn gone(&self, dest: &str, digest: &str, r: &Reference) {
        // A lost line costs a question to the destination on the next run, or an upload.
        let _ = crate::mirror::completed::append_gone(&self.completed, dest, digest);
        if self.placements.exists() {
            let _ = crate::mirror::placements::forget(&self.placements, &r.registry, &r.repository);
        }
    }
}
