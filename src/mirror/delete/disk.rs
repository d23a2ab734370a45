//! A mirror on disk (`file://DIR`) under `mirror delete`. DIR is its own workspace, and its
//! record is read from what it holds: the listing (`mirror.json`: each catalog and the bundles
//! it keeps, each image and what brought it), the layout's `index.json` (each name's digest)
//! and `deleted.tsv` (what deletes took out). As phase 2's target, a name leaves `index.json`
//! (a layout is named, not addressed, so no other name goes with it), a catalog is rebuilt
//! into the layout under its name, the listing follows each step (so that `--from` pushes only
//! what remains), and at the end every blob no remaining name reaches is removed and dropped
//! from the history (so that no archive names it).

use super::execute::{Gone, Target};
use super::list::Checked;
use super::Change;
use crate::error::Error;
use crate::mirror::standing::{self, Bundles, Catalog, Image, Standing};
use crate::oci::layout_reader::{self, Layout};
use crate::oci::layout_writer::LayoutWriter;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What deletes took out of the layout: `NAME\tDIGEST` lines, appended as each goes.
pub const DELETED: &str = "deleted.tsv";

const LIMIT: u64 = crate::image::DEFAULT_MAX_MANIFEST_SIZE;

fn failed(dir: &Path) -> impl Fn(anyhow::Error) -> Error + '_ {
    move |e| Error::failed(format!("{}: {}", dir.display(), crate::text::one_line(&e)))
}

/// What stands in the mirror on disk at `dir`: each catalog and image of its listing still
/// named in its layout, by that name; those no longer named are deleted.
pub fn standing(dir: &Path) -> Result<Standing, Error> {
    let (cfg, listing) = crate::mirror::disk::read(dir)?;
    let names: BTreeMap<String, String> = Layout::open(dir)
        .and_then(|l| l.entries(LIMIT))
        .map_err(failed(dir))?
        .into_iter()
        .map(|e| (e.name, e.digest))
        .collect();
    let mut s = Standing {
        deleted: tombstones(dir),
        ..Default::default()
    };
    let catalogs: Vec<(&str, &Bundles)> = listing
        .catalogs
        .iter()
        .map(|c| (c.name.as_str(), &c.kept))
        .collect();
    for c in &listing.catalogs {
        // The listing was checked against the configuration's entries when read.
        let op = &cfg.mirror.operators[c.entry];
        s.catalogs.insert(
            c.name.clone(),
            Catalog {
                source: op.catalog.clone(),
                entry: crate::mirror::config::unique_name(op),
                digest: names.get(&c.name).unwrap_or(&c.rebuilt).clone(),
                bundles: c.kept.clone(),
            },
        );
    }
    for w in &listing.images {
        match names.get(&w.source) {
            Some(digest) => {
                s.images.insert(
                    w.source.clone(),
                    Image {
                        source: w.source.clone(),
                        digest: digest.clone(),
                        named_by: standing::owners(&catalogs, &w.origins),
                    },
                );
            }
            None => {
                s.deleted.entry(w.source.clone()).or_default();
            }
        }
    }
    Ok(s)
}

/// `DIR/deleted.tsv`: name -> digest (a torn or malformed line is skipped).
fn tombstones(dir: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir.join(DELETED)).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect()
}

/// A mirror on disk as phase 2's target.
pub struct OnDisk {
    dir: PathBuf,
    image: crate::image::ImageOptions,
    writer: LayoutWriter,
}

impl OnDisk {
    /// The mirror on disk at `dir`; catalogs are rebuilt reading with `image`.
    pub fn open(dir: &Path, image: crate::image::ImageOptions) -> Result<OnDisk, Error> {
        Layout::open(dir).map_err(failed(dir))?;
        Ok(OnDisk {
            dir: dir.to_path_buf(),
            image,
            writer: LayoutWriter::create(dir).map_err(failed(dir))?,
        })
    }

    /// The JSON document of the blob `digest`, if it is one.
    fn document(&self, digest: &str) -> anyhow::Result<Option<serde_json::Value>> {
        let path = layout_reader::blob_path(&self.dir, digest)?;
        let bytes =
            crate::oci::source::read_limited(std::fs::File::open(&path)?, LIMIT, "manifest")?;
        Ok(serde_json::from_slice(&bytes).ok())
    }
}

impl Target for OnDisk {
    fn probe(&mut self, _: Option<&Checked>, _: &[Change]) -> Result<(), Error> {
        // A layout is opreg's to change: nothing to ask.
        Ok(())
    }

    fn rebuild(&mut self, ch: &Change, _: &Standing) -> Result<Option<String>, Error> {
        let name = &ch.destination;
        let current = layout_reader::named(&self.dir, name, LIMIT)
            .map_err(failed(&self.dir))?
            .ok_or_else(|| {
                Error::failed(format!(
                    "the catalog {name} is not in {}",
                    self.dir.display()
                ))
            })?;
        let pinned = format!("oci:{}:{name}", self.dir.display());
        let Some(planned) = super::catalogs::planned(ch, &pinned, &current.digest, &self.image)?
        else {
            return Ok(None);
        };
        let opts = super::catalogs::options(&self.image);
        let r = crate::mirror::rebuild::rebuild_to_layout(&planned, &opts, &self.dir, name)?;
        Ok(Some(r.digest))
    }

    fn delete(
        &mut self,
        c: &Checked,
        recorded: Option<&str>,
        _: &BTreeSet<String>,
    ) -> anyhow::Result<Gone> {
        let Some(e) = layout_reader::named(&self.dir, &c.name, LIMIT)? else {
            return Ok(Gone::Already);
        };
        if recorded.is_some_and(|r| r != e.digest) {
            return Ok(Gone::Moved(e.digest));
        }
        let children: Vec<String> = self
            .document(&e.digest)?
            .and_then(|v| v.get("manifests").and_then(|m| m.as_array()).cloned())
            .into_iter()
            .flatten()
            .filter_map(|m| m.get("digest").and_then(|d| d.as_str()).map(str::to_string))
            .collect();
        self.writer.untag(&BTreeSet::from([c.name.clone()]))?;
        let mut all = vec![e.digest];
        all.extend(children);
        Ok(Gone::Now(all))
    }

    fn in_use(&self, _: &Standing, _: &str) -> BTreeSet<String> {
        // Names leave the layout, not digests: what another name still reaches stays.
        BTreeSet::new()
    }

    fn forget(&mut self, c: &Checked, digest: &str) {
        // A lost line only makes the same list's rerun report the image as already gone.
        let line = format!("{}\t{digest}\n", c.name);
        let _ = crate::mirror::record::append(&self.dir.join(DELETED), &line);
    }

    fn signatures(&mut self, c: &Checked, digests: &[String]) -> anyhow::Result<usize> {
        // In a layout they are named by the source repository (see `mirror::ends`).
        let repo = format!("{}/{}", c.reference.registry, c.reference.repository);
        let mut names = BTreeSet::new();
        for d in digests {
            let base = crate::digest::tag_form(d);
            for suffix in [".sig", ".att", ".sbom", ""] {
                names.insert(format!("{repo}:{base}{suffix}"));
            }
        }
        let referrers = format!("{repo}@");
        for e in Layout::open(&self.dir)?.entries(LIMIT)? {
            if !e.name.starts_with(&referrers) {
                continue;
            }
            let subject = self.document(&e.digest)?.and_then(|v| {
                v.pointer("/subject/digest")
                    .and_then(|s| s.as_str())
                    .map(str::to_string)
            });
            if subject.is_some_and(|s| digests.contains(&s)) {
                names.insert(e.name);
            }
        }
        self.writer.untag(&names)
    }

    fn record(&mut self, standing: &Standing) -> Result<(), Error> {
        let (_, mut listing) = crate::mirror::disk::read(&self.dir)?;
        listing
            .catalogs
            .retain(|c| standing.catalogs.contains_key(&c.name));
        for c in &mut listing.catalogs {
            if let Some(s) = standing.catalogs.get(&c.name) {
                c.kept = s.bundles.clone();
                c.rebuilt = s.digest.clone();
            }
        }
        listing
            .images
            .retain(|w| standing.images.contains_key(&w.source));
        let mut text =
            serde_json::to_vec_pretty(&listing).map_err(|e| Error::failed(e.to_string()))?;
        text.push(b'\n');
        crate::mirror::workspace::write_named(&self.dir.join(crate::mirror::disk::LISTING), &text)
            .map_err(|e| Error::failed(e.to_string()))
    }

    fn finish(&mut self) -> Result<Option<usize>, Error> {
        let removed = self.writer.collect(LIMIT).map_err(failed(&self.dir))?;
        let history = self.dir.join(crate::mirror::history::FILE);
        if !removed.is_empty() && history.is_file() {
            let gone: BTreeSet<PathBuf> = removed.iter().cloned().collect();
            let mut h = crate::mirror::history::read(&self.dir).map_err(Error::failed)?;
            crate::mirror::history::forget(&mut h, &gone);
            crate::mirror::history::write(&self.dir, &h).map_err(Error::failed)?;
        }
        Ok(Some(removed.len()))
    }
}
