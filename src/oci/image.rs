//! Reading one image whole from any [`BlobSource`] (a registry or an OCI layout): the top
//! manifest or index, an index's manifests, each checked against its digest, and the blobs
//! (configs and layers) they reference. Copies, pushes and a build's staged image all read
//! images through [`read`].
//!
//! A manifest's media type is the document's own `mediaType`; else the type it was served
//! with, or listed with in a layout's `index.json` or a referring index, when that is one of
//! the four manifest types; else the OCI type its shape says. So a Docker manifest or list
//! without a `mediaType` keeps its Docker type.

use super::layout_writer::Top;
use super::manifest::{self, Manifest};
use super::source::{BlobSource, Fetched};
use anyhow::{anyhow, bail, Result};

/// One manifest or index as read: its descriptor and its bytes (copied byte for byte).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Doc {
    pub desc: Top,
    pub bytes: Vec<u8>,
}

/// An image or index with everything it references.
#[derive(Clone, Debug)]
pub struct Image {
    pub top: Doc,
    /// An index's manifests (empty for a single image).
    pub children: Vec<Doc>,
    /// Configs and layers, each once, with their sizes.
    pub blobs: Vec<(String, u64)>,
}

impl Image {
    /// The top manifest's digest.
    pub fn digest(&self) -> &str {
        &self.top.desc.digest
    }
}

/// Reads the image `reference` names (a tag or digest; "" for a layout's only image).
pub fn read(src: &mut dyn BlobSource, reference: &str, limit: u64) -> Result<Image> {
    let f = src.manifest(reference, limit)?;
    read_from(src, f, reference, limit)
}

/// [`read`], the top manifest `f` fetched already (by `reference`).
pub fn read_from(
    src: &mut dyn BlobSource,
    f: Fetched,
    reference: &str,
    limit: u64,
) -> Result<Image> {
    let digest = crate::digest::sha256(&f.bytes);
    if crate::digest::is_valid(reference) && !crate::digest::matches(reference, &f.bytes) {
        bail!("manifest {reference} does not match its digest");
    }
    let (top_manifest, top) = doc(f.bytes, digest, f.content_type.as_deref())?;
    let mut children = Vec::new();
    let mut images = Vec::new();
    match top_manifest {
        Manifest::Index { manifests } => {
            for d in manifests {
                let bytes = src.manifest(&d.digest, limit)?.bytes;
                if !crate::digest::matches(&d.digest, &bytes) {
                    bail!("manifest {} does not match its digest", d.digest);
                }
                let (m, child) = doc(bytes, d.digest.clone(), Some(&d.media_type))?;
                images.push(m);
                children.push(child);
            }
        }
        m => images.push(m),
    }
    let blobs = manifest::blobs_of(images)
        .ok_or_else(|| anyhow!("image indexes nested in an index are not supported"))?;
    Ok(Image {
        top,
        children,
        blobs,
    })
}

/// A manifest's bytes parsed, with its media type (the module's rule).
fn doc(bytes: Vec<u8>, digest: String, content_type: Option<&str>) -> Result<(Manifest, Doc)> {
    let m = manifest::parse_manifest(&bytes, content_type)
        .map_err(|e| anyhow!("manifest {digest}: {e}"))?;
    let media_type = media_type(&bytes, &m, content_type);
    let desc = Top {
        media_type,
        size: bytes.len() as u64,
        digest,
    };
    Ok((m, Doc { desc, bytes }))
}

/// The document's `mediaType`, else the manifest type it came with, else its shape's.
fn media_type(bytes: &[u8], m: &Manifest, content_type: Option<&str>) -> String {
    let declared = serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| {
            v.get("mediaType")
                .and_then(|t| t.as_str())
                .map(str::to_string)
        })
        .filter(|t| !t.is_empty());
    let served = content_type
        .map(|c| c.split(';').next().unwrap_or("").trim().to_string())
        .filter(|c| manifest::is_manifest_type(c));
    declared.or(served).unwrap_or_else(|| match m {
        Manifest::Index { .. } => manifest::OCI_INDEX.to_string(),
        Manifest::Image { .. } => manifest::OCI_MANIFEST.to_string(),
    })
}

#[cfg(test)]
#[path = "image_tests.rs"]
mod tests;
