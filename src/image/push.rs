//! Pushing an image read from an OCI layout to a registry: a [`super::copy`] from the layout
//! to the registry, with the base image's repository to mount from.
//!
//! Each blob is asked for first (HEAD) and sent only when missing: mounted from another
//! repository of the same registry when the caller names one (the base image's), else
//! uploaded, streamed, in one request or, when large, in chunks. A request answered 429 or
//! 5xx, or cut off, is tried again as every registry request is ([`crate::registry::retry::Retries`]). Manifests go last, an index's platform manifests before the index, so a tag never
//! points at content the registry lacks: a push that fails half-way leaves unreferenced blobs
//! at most.

use super::copy::CopyOptions;
use super::reference::{ImageSource, Reference};
use crate::progress::Progress;
use crate::registry::{Connection, Connections};
use anyhow::anyhow;
use std::path::Path;

pub use super::copy::Copied as Pushed;

/// How to push: a copy's options, one blob at a time, so that a refusal stops the push after
/// one request, as `image push` always did.
pub fn options() -> CopyOptions {
    CopyOptions {
        jobs: 1,
        ..CopyOptions::default()
    }
}

/// Pushes the image `digest` of the layout at `dir` (read whole already, with
/// [`crate::oci::image::read`]) to `to` (its tag, `latest` when it has none), reporting to
/// `progress`; `opts.mount_from` names the repository of the target's registry that may hold
/// some of the blobs (the base image's). The error is one line naming the reference.
pub fn push(
    dir: &Path,
    digest: &str,
    to: &Reference,
    dest: &Connection,
    opts: &CopyOptions,
    progress: &dyn Progress,
) -> anyhow::Result<Pushed> {
    // Read from a local layout: the source side is never a registry.
    let sides = Connections {
        source: Connection::default(),
        destination: dest.clone(),
    };
    // The image was read whole already: its top manifest is named by digest.
    let from = ImageSource::Layout {
        dir: dir.to_path_buf(),
        tag: None,
    };
    super::copy::copy_digest(
        &from,
        digest,
        &ImageSource::Registry(to.clone()),
        &sides,
        opts,
        progress,
    )
    .map_err(|e| {
        anyhow!(
            "{}",
            crate::text::one_line(format!("push to {}: {e:#}", to.given))
        )
    })
}

/// Writes a `--digest-file` (`image push`, `image build`): the digest and a newline, whole or
/// not at all (a temporary file beside it, synced, renamed), created like any new file (0666
/// less the umask).
pub fn write_digest_file(path: &std::path::Path, digest: &str) -> std::io::Result<()> {
    use crate::atomic::{Mode, Options};
    let text = format!("{digest}\n");
    crate::atomic::write(path, text.as_bytes(), &Options::mode(Mode::Create(0o666)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_digest_file_is_the_digest_and_a_newline_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("digest");
        std::fs::write(&f, "an older, longer digest file\n").unwrap();
        super::write_digest_file(&f, "sha256:ab").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "sha256:ab\n");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left beside it");
        let missing = dir.path().join("no/such/dir/digest");
        assert!(super::write_digest_file(&missing, "sha256:ab").is_err());
    }
}
