//! Pushing an image read from an OCI layout to a registry: a [`super::copy`] from the layout
//! to the registry, with the base image's repository to mount from.
//!
//! Each blob is asked for first (HEAD) and sent only when missing: mounted from another
//! repository of the same registry when the caller names one (the base image's), else
//! uploaded, streamed, in one request or, when large, in chunks. A request answered 429 or
//! 5xx, or cut off, is tried again as every registry request is ([`super::retry::Retries`]). Manifests go last, an index's platform manifests before the index, so a tag never
//! points at content the registry lacks: a push that fails half-way leaves unreferenced blobs
//! at most.

use super::copy::CopyOptions;
use super::reference::{ImageSource, Reference};
use super::registry::Connection;
use crate::progress::Progress;
use anyhow::anyhow;
use std::path::Path;

pub use super::copy::Copied as Pushed;

/// How to push.
#[derive(Clone, Debug)]
pub struct PushOptions {
    pub connection: Connection,
    /// A repository of the target's registry that may hold some of the blobs (the base
    /// image's): they are mounted from it instead of uploaded.
    pub mount_from: Option<String>,
    /// Blobs larger than this go in chunks of this size.
    pub chunk_size: u64,
    /// Blobs sent at the same time. One by default, so that a refusal stops the push after
    /// one request, as `image push` always did.
    pub jobs: usize,
}

impl PushOptions {
    pub fn new(connection: Connection) -> PushOptions {
        PushOptions {
            connection,
            mount_from: None,
            chunk_size: 16 << 20,
            jobs: 1,
        }
    }
}

/// Pushes the image `digest` of the layout at `dir` (read whole already, with
/// [`crate::oci::image::read`]) to `to` (its tag, `latest` when it has none), reporting to
/// `progress`. The error is one line naming the reference.
pub fn push(
    dir: &Path,
    digest: &str,
    to: &Reference,
    opts: &PushOptions,
    progress: &dyn Progress,
) -> anyhow::Result<Pushed> {
    let mut copy = CopyOptions::new(opts.connection.clone());
    copy.mount_from = opts.mount_from.clone();
    copy.chunk_size = opts.chunk_size;
    copy.jobs = opts.jobs;
    // The image was read whole already: its top manifest is named by digest.
    let from = ImageSource::Layout {
        dir: dir.to_path_buf(),
        tag: None,
    };
    super::copy::copy_digest(
        &from,
        digest,
        &ImageSource::Registry(to.clone()),
        &copy,
        progress,
    )
    .map_err(|e| {
        anyhow!(
            "{}",
            format!("push to {}: {e:#}", to.given).replace('\n', "; ")
        )
    })
}
