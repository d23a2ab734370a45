//! The two ends of an image's copy: registries (mirror to mirror), or an OCI layout on disk
//! (mirror to disk writes one, disk to mirror reads one).
//!
//! In a layout each image is named (`org.opencontainers.image.ref.name`) by its source
//! reference as the catalog or configuration wrote it; what travels with it, by its source
//! repository: `REGISTRY/REPOSITORY:sha256-<hex>.sig` for a signature tag and
//! `REGISTRY/REPOSITORY@sha256:<hex>` for a referrer.

use super::plan::digest_tag;
use crate::image::reference::{self, ImageSource, Reference};
use crate::image::tags;
use crate::oci::layout_reader::{Entry, Layout};
use crate::oci::source::{BlobSource, Fetched};
use crate::registry::{Connection, Registry};
use anyhow::{anyhow, Result};
use std::path::{Path, PathBuf};

/// One side of a mirror.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum End {
    /// Registries, as the references name them.
    #[default]
    Registry,
    /// An OCI layout directory.
    Layout(PathBuf),
}

/// Where an image is read from.
pub enum Reader {
    Registry(Box<Registry>),
    Layout(Layout, PathBuf),
}

impl Reader {
    /// The reader of `from` (the source reference, parsed) on `end`.
    pub fn open(end: &End, from: &Reference, conn: &Connection) -> Result<Reader> {
        Ok(match end {
            End::Registry => Reader::Registry(Box::new(Registry::new(from, conn)?)),
            End::Layout(dir) => Reader::Layout(Layout::open(dir)?, dir.clone()),
        })
    }

    /// The top manifest of the image `source` names (its reference at a registry, its name in
    /// a layout).
    pub fn top(&mut self, source: &str, from: &Reference, limit: u64) -> Result<Fetched> {
        match self {
            Reader::Registry(r) => r.manifest(from.manifest_ref(), limit),
            Reader::Layout(l, _) => l.manifest(source, limit),
        }
    }

    /// Any manifest, by digest.
    pub fn manifest(&mut self, digest: &str, limit: u64) -> Result<Fetched> {
        match self {
            Reader::Registry(r) => r.manifest(digest, limit),
            Reader::Layout(l, _) => l.manifest(digest, limit),
        }
    }

    /// The image source a copy reads `from` at (a layout by digest).
    pub fn image(&self, from: &Reference) -> ImageSource {
        match self {
            Reader::Registry(_) => ImageSource::Registry(from.clone()),
            Reader::Layout(_, dir) => ImageSource::Layout {
                dir: dir.clone(),
                tag: None,
            },
        }
    }
}

/// Where an image is written: a registry repository at a tag, or a name in a layout.
pub enum Writer {
    Registry {
        reg: Box<Registry>,
        to: Reference,
    },
    Layout {
        dir: PathBuf,
        /// The image's source, whose repository names what travels with it.
        from: Reference,
        name: String,
    },
}

impl Writer {
    /// The writer of the image `source` (parsed as `from`) that goes to `destination` with
    /// `digest`: at a registry always by tag ([`digest_tag`] for a digest-only name); in a
    /// layout under `destination` as its name.
    pub fn open(
        end: &End,
        from: &Reference,
        destination: &str,
        digest: &str,
        conn: &Connection,
    ) -> Result<Writer> {
        Ok(match end {
            End::Registry => {
                let mut to =
                    reference::parse(destination).map_err(|e| anyhow!("{destination}: {e}"))?;
                if to.tag.is_none() {
                    to.tag = Some(digest_tag(digest));
                }
                to.digest = None;
                let reg = Box::new(Registry::new(&to, conn)?);
                Writer::Registry { reg, to }
            }
            End::Layout(dir) => Writer::Layout {
                dir: dir.clone(),
                from: from.clone(),
                name: destination.to_string(),
            },
        })
    }

    /// The image's place at a registry, `REGISTRY/REPOSITORY:TAG` (none in a layout): what
    /// [`super::completed`] records.
    pub fn key(&self) -> Option<String> {
        match self {
            Writer::Registry { to, .. } => Some(format!(
                "{}/{}:{}",
                to.registry,
                to.repository,
                to.tag.as_deref().unwrap_or_default()
            )),
            Writer::Layout { .. } => None,
        }
    }

    /// The image source a copy writes the image to.
    pub fn image(&self) -> ImageSource {
        match self {
            Writer::Registry { to, .. } => ImageSource::Registry(to.clone()),
            Writer::Layout { dir, name, .. } => ImageSource::Layout {
                dir: dir.clone(),
                tag: Some(name.clone()),
            },
        }
    }

    /// True when the image is there with `digest`.
    pub fn holds(&mut self, digest: &str, limit: u64) -> Result<bool> {
        match self {
            Writer::Registry { reg, to } => {
                let tag = to.tag.clone().unwrap_or_default();
                Ok(tags::head_manifest(reg, &tag)?.as_deref() == Some(digest))
            }
            Writer::Layout { dir, name, .. } => {
                Ok(named(dir, name, limit)?.is_some_and(|e| e.digest == digest))
            }
        }
    }

    /// True when the destination has the blob (a layout is asked without being created: a
    /// dry run writes nothing there).
    pub fn has_blob(&mut self, digest: &str) -> Result<bool> {
        match self {
            Writer::Registry { reg, .. } => crate::registry::upload::exists(reg, digest),
            Writer::Layout { dir, .. } => {
                Ok(crate::digest::blob_path(digest).is_some_and(|p| dir.join(p).is_file()))
            }
        }
    }

    /// The image's top manifest when it is there with `digest` (one request at a registry).
    pub fn held(&mut self, digest: &str, limit: u64) -> Result<Option<Fetched>> {
        let found = match self {
            Writer::Registry { reg, to } => {
                let tag = to.tag.clone().unwrap_or_default();
                reg.manifest_if_any(&tag, limit)?
            }
            Writer::Layout { dir, name, .. } => match named(dir, name, limit)? {
                Some(e) if e.digest == digest => Some(Layout::open(dir)?.manifest(digest, limit)?),
                _ => None,
            },
        };
        Ok(found.filter(|f| crate::digest::matches(digest, &f.bytes)))
    }

    /// The image source a signature tag goes to, and whether it is there with `digest`.
    pub fn tag_beside(
        &mut self,
        tag: &str,
        digest: &str,
        limit: u64,
    ) -> Result<(ImageSource, bool)> {
        match self {
            Writer::Registry { reg, to } => {
                let there = tags::head_manifest(reg, tag)?.as_deref() == Some(digest);
                let mut d = to.clone();
                d.tag = Some(tag.to_string());
                Ok((ImageSource::Registry(d), there))
            }
            Writer::Layout { dir, from, .. } => {
                let name = format!("{}/{}:{tag}", from.registry, from.repository);
                let there = named(dir, &name, limit)?.is_some_and(|e| e.digest == digest);
                Ok((layout_at(dir, name), there))
            }
        }
    }

    /// The image source a referrer goes to (by digest), and whether it is there.
    pub fn referrer_beside(&mut self, digest: &str, limit: u64) -> Result<(ImageSource, bool)> {
        match self {
            Writer::Registry { reg, to } => {
                let there = tags::head_manifest(reg, digest)?.is_some();
                let mut d = to.clone();
                d.tag = None;
                d.digest = Some(digest.to_string());
                Ok((ImageSource::Registry(d), there))
            }
            Writer::Layout { dir, from, .. } => {
                let name = referrer_name(from, digest);
                let there = named(dir, &name, limit)?.is_some();
                Ok((layout_at(dir, name), there))
            }
        }
    }
}

fn layout_at(dir: &Path, name: String) -> ImageSource {
    ImageSource::Layout {
        dir: dir.to_path_buf(),
        tag: Some(name),
    }
}

/// A referrer's name in a layout: `REGISTRY/REPOSITORY@DIGEST` of the image it is about.
pub fn referrer_name(from: &Reference, digest: &str) -> String {
    format!("{}/{}@{digest}", from.registry, from.repository)
}

/// The entry of the layout at `dir` named `name`, if any (none when there is no layout yet).
pub fn named(dir: &Path, name: &str, limit: u64) -> Result<Option<Entry>> {
    if !dir.join("index.json").is_file() {
        return Ok(None);
    }
    Ok(Layout::open(dir)?
        .entries(limit)?
        .into_iter()
        .find(|e| e.name == name))
}
