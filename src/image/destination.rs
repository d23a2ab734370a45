//! Where an image is written: a repository of a registry, or an OCI layout. [`super::copy`]
//! writes through it alone (blobs, an index's manifests, the top manifest last, so that a tag
//! never names what the destination lacks), and a mirror asks it what is there already before
//! it copies (`mirror::transfer`).

use super::reference::{ImageSource, Reference};
use super::tags;
use crate::oci::image::Doc;
use crate::oci::layout_reader::{self, Layout};
use crate::oci::layout_writer::LayoutWriter;
use crate::oci::source::{BlobSource, Fetched};
use crate::progress::Sent;
use crate::registry::upload::{self, Sending};
use crate::registry::{Connection, Registry};
use anyhow::Result;
use std::io::Read;
use std::path::PathBuf;

/// One destination and the name the image gets there.
pub enum Destination {
    /// A repository, the image put at `to`'s tag, else its digest, else `latest`.
    Registry { reg: Box<Registry>, to: Reference },
    /// A layout, the image listed as `tag` (unnamed without one). The layout is created only
    /// when something is written to it.
    Layout {
        dir: PathBuf,
        tag: Option<String>,
        writer: Option<LayoutWriter>,
    },
}

impl Destination {
    /// The destination `to` names. A registry client asks for push rights when `push` (a
    /// copy's); without, it only asks what is there (a mirror's questions).
    pub fn open(to: &ImageSource, conn: &Connection, push: bool) -> Result<Destination> {
        Ok(match to {
            ImageSource::Registry(r) => {
                let reg = Registry::new(r, conn)?;
                let reg = Box::new(if push { reg.for_push() } else { reg });
                Destination::Registry { reg, to: r.clone() }
            }
            ImageSource::Layout { dir, tag } => Destination::Layout {
                dir: dir.clone(),
                tag: tag.clone(),
                writer: None,
            },
        })
    }

    /// The name the image gets: a registry tag (or digest, or `latest`); a layout's name.
    pub fn name(&self) -> Option<String> {
        match self {
            Destination::Registry { to, .. } => Some(
                to.tag
                    .clone()
                    .or_else(|| to.digest.clone())
                    .unwrap_or_else(|| "latest".into()),
            ),
            Destination::Layout { tag, .. } => tag.clone(),
        }
    }

    /// The image source of `name` beside the image: at a registry a tag, or a digest when it
    /// is one (`sha256:…`); in a layout the entry so named.
    pub fn at(&self, name: &str) -> ImageSource {
        match self {
            Destination::Registry { to, .. } => {
                let mut r = to.clone();
                if name.starts_with("sha256:") {
                    r.tag = None;
                    r.digest = Some(name.to_string());
                } else {
                    r.tag = Some(name.to_string());
                    r.digest = None;
                }
                ImageSource::Registry(r)
            }
            Destination::Layout { dir, .. } => ImageSource::Layout {
                dir: dir.clone(),
                tag: Some(name.to_string()),
            },
        }
    }

    /// The image source the destination itself names.
    pub fn target(&self) -> ImageSource {
        match self {
            Destination::Registry { to, .. } => ImageSource::Registry(to.clone()),
            Destination::Layout { dir, tag, .. } => ImageSource::Layout {
                dir: dir.clone(),
                tag: tag.clone(),
            },
        }
    }

    /// The digest of the manifest `name` names there, if any (a HEAD at a registry; a layout
    /// is read without being created).
    pub fn digest_at(&mut self, name: &str, limit: u64) -> Result<Option<String>> {
        match self {
            Destination::Registry { reg, .. } => tags::head_manifest(reg, name),
            Destination::Layout { dir, .. } => {
                Ok(layout_reader::named(dir, name, limit)?.map(|e| e.digest))
            }
        }
    }

    /// The image's top manifest when it is there with `digest` (one request at a registry).
    pub fn held(&mut self, digest: &str, limit: u64) -> Result<Option<Fetched>> {
        let name = self.name().unwrap_or_default();
        let found = match self {
            Destination::Registry { reg, .. } => reg.manifest_if_any(&name, limit)?,
            Destination::Layout { dir, .. } => match layout_reader::named(dir, &name, limit)? {
                Some(e) if e.digest == digest => Some(Layout::open(dir)?.manifest(digest, limit)?),
                _ => None,
            },
        };
        Ok(found.filter(|f| crate::digest::matches(digest, &f.bytes)))
    }

    /// True when the destination has the blob (a layout is asked without being created: a
    /// dry run writes nothing there).
    pub fn has_blob(&mut self, digest: &str) -> Result<bool> {
        match self {
            Destination::Registry { reg, .. } => upload::exists(reg, digest),
            Destination::Layout { dir, .. } => {
                Ok(layout_reader::blob_path(dir, digest).is_ok_and(|p| p.is_file()))
            }
        }
    }

    /// The registry and repository, for a registry destination.
    pub fn repository(&self) -> Option<(&str, &str)> {
        match self {
            Destination::Registry { to, .. } => Some((&to.registry, &to.repository)),
            Destination::Layout { .. } => None,
        }
    }

    /// Sends the blob unless the destination has it: mounted from `mount_from` when the
    /// registry can, else read from `src` and uploaded; copied and verified into a layout.
    pub fn put_blob(
        &mut self,
        src: &mut dyn BlobSource,
        digest: &str,
        size: u64,
        mount_from: Option<&str>,
        sending: &Sending,
    ) -> Result<Sent> {
        match self {
            Destination::Registry { reg, .. } => {
                if upload::exists(reg, digest)? {
                    return Ok(Sent::Skipped);
                }
                let mut open = || -> Result<Box<dyn Read + Send>> { src.blob(digest) };
                upload::upload(reg, digest, size, mount_from, sending, &mut open)
            }
            Destination::Layout { .. } => {
                let w = self.writer()?;
                if w.has(digest) {
                    return Ok(Sent::Skipped);
                }
                w.copy_from(src, digest, size)?;
                Ok(Sent::Uploaded)
            }
        }
    }

    /// Puts an index's manifest, by its digest.
    pub fn put_manifest(&mut self, doc: &Doc, sending: &Sending) -> Result<()> {
        match self {
            Destination::Registry { reg, .. } => upload::put_manifest(
                reg,
                &doc.desc.media_type,
                &doc.bytes,
                &doc.desc.digest,
                sending,
            ),
            Destination::Layout { .. } => self.writer()?.put(&doc.bytes).map(drop),
        }
    }

    /// Puts the top manifest under the destination's name: the last write of a copy.
    pub fn put_top(&mut self, doc: &Doc, sending: &Sending) -> Result<()> {
        let name = self.name();
        match self {
            Destination::Registry { reg, .. } => upload::put_manifest(
                reg,
                &doc.desc.media_type,
                &doc.bytes,
                &name.unwrap_or_default(),
                sending,
            ),
            Destination::Layout { .. } => {
                let w = self.writer()?;
                w.put(&doc.bytes)?;
                w.tag(&doc.desc, name.as_deref())
            }
        }
    }

    /// The layout's writer, the layout created on first use.
    fn writer(&mut self) -> Result<&LayoutWriter> {
        match self {
            Destination::Layout { dir, writer, .. } => {
                if writer.is_none() {
                    *writer = Some(LayoutWriter::create(dir)?);
                }
                writer
                    .as_ref()
                    .ok_or_else(|| anyhow::anyhow!("{}: no layout writer", dir.display()))
            }
            Destination::Registry { .. } => anyhow::bail!("a registry has no layout writer"),
        }
    }
}
