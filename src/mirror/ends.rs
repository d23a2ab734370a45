//! The two ends of a mirror's copies: registries (mirror to mirror), or an OCI layout on disk
//! (mirror to disk writes one, disk to mirror reads one). Images are written through
//! [`Destination`], the copy's own; this module names them there.
//!
//! In a layout each image is named (`org.opencontainers.image.ref.name`) by its source
//! reference as the catalog or configuration wrote it; what travels with it, by its source
//! repository: `REGISTRY/REPOSITORY:sha256-<hex>.sig` for a signature tag and
//! `REGISTRY/REPOSITORY@sha256:<hex>` for a referrer.

use super::plan::digest_tag;
use crate::image::destination::Destination;
use crate::image::reference::{self, ImageSource, Reference};
use crate::oci::layout_reader::Layout;
use crate::oci::source::{BlobSource, Fetched};
use crate::registry::{Connection, Registry};
use anyhow::{anyhow, Result};
use std::path::PathBuf;

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

/// The destination of the image `source` that goes to `destination` with `digest`: at a
/// registry always by tag ([`digest_tag`] for a digest-only name); in a layout under
/// `destination` as its name. Its registry client only asks (a copy opens its own).
pub fn destination(
    end: &End,
    destination: &str,
    digest: &str,
    conn: &Connection,
) -> Result<Destination> {
    let to = match end {
        End::Registry => {
            let mut to =
                reference::parse(destination).map_err(|e| anyhow!("{destination}: {e}"))?;
            if to.tag.is_none() {
                to.tag = Some(digest_tag(digest));
            }
            to.digest = None;
            ImageSource::Registry(to)
        }
        End::Layout(dir) => ImageSource::Layout {
            dir: dir.clone(),
            tag: Some(destination.to_string()),
        },
    };
    Destination::open(&to, conn, false)
}

/// The image's place at a registry, `REGISTRY/REPOSITORY:TAG` (none in a layout): what
/// [`super::completed`] records.
pub fn key(dest: &Destination) -> Option<String> {
    match dest {
        Destination::Registry { to, .. } => Some(format!(
            "{}/{}:{}",
            to.registry,
            to.repository,
            to.tag.as_deref().unwrap_or_default()
        )),
        Destination::Layout { .. } => None,
    }
}

/// True when the image is there with `digest`.
pub fn holds(dest: &mut Destination, digest: &str, limit: u64) -> Result<bool> {
    let name = dest.name().unwrap_or_default();
    Ok(dest.digest_at(&name, limit)?.as_deref() == Some(digest))
}

/// The image source a signature tag of the image `from` goes to, and whether it is there
/// with `digest`: beside the image at a registry; in a layout named by the source repository.
pub fn tag_beside(
    dest: &mut Destination,
    from: &Reference,
    tag: &str,
    digest: &str,
    limit: u64,
) -> Result<(ImageSource, bool)> {
    let name = match dest {
        Destination::Registry { .. } => tag.to_string(),
        Destination::Layout { .. } => format!("{}/{}:{tag}", from.registry, from.repository),
    };
    let there = dest.digest_at(&name, limit)?.as_deref() == Some(digest);
    Ok((dest.at(&name), there))
}

/// The image source a referrer of the image `from` goes to (by digest), and whether it is there.
pub fn referrer_beside(
    dest: &mut Destination,
    from: &Reference,
    digest: &str,
    limit: u64,
) -> Result<(ImageSource, bool)> {
    let name = match dest {
        Destination::Registry { .. } => digest.to_string(),
        Destination::Layout { .. } => referrer_name(from, digest),
    };
    let there = dest.digest_at(&name, limit)?.is_some();
    Ok((dest.at(&name), there))
}

/// A referrer's name in a layout: `REGISTRY/REPOSITORY@DIGEST` of the image it is about.
pub fn referrer_name(from: &Reference, digest: &str) -> String {
    format!("{}/{}@{digest}", from.registry, from.repository)
}
