//! `opreg image build` from start to end: build the image, write it to every `oci:` target,
//! push it to every registry target (with `push`; otherwise say what would be pushed), sign
//! what was pushed, and write the digest file only when the image went somewhere. Each step is
//! reported through [`Event`]s as it happens, so the caller prints them in order. [`push`] is
//! `opreg image push`'s: an OCI layout pushed to a registry, then signed, reported the same way.

use super::{BuildOptions, Target};
use crate::error::Error;
use crate::image::push::Pushed;
use crate::image::reference::Reference;
use crate::image::signature::Signed;
use crate::registry::Connection;
use crate::sign::keys::SigningKey;
use std::path::PathBuf;

/// What to build and where it goes.
pub struct RunOptions<'a> {
    pub build: BuildOptions,
    pub targets: Vec<Target>,
    /// Push registry targets (without it, they are reported as [`Event::WouldPush`]).
    pub push: bool,
    pub chunk_size: u64,
    /// Sign each pushed image with this key.
    pub sign_key: Option<&'a SigningKey>,
    /// `--digest-file`: written only when a target was written or pushed.
    pub digest_file: Option<PathBuf>,
}

/// One step done, for the caller to report.
pub enum Event<'a> {
    /// The image is built: what reading the catalog found, and the base's note.
    Built {
        warnings: &'a [crate::diag::Diagnostic],
        note: Option<&'a str>,
    },
    /// An `oci:` target written.
    Wrote { target: &'a str, digest: &'a str },
    Pushed {
        to: &'a Reference,
        pushed: &'a Pushed,
    },
    Signed {
        to: &'a Reference,
        signed: &'a Signed,
    },
    /// A registry target not pushed (no `push`).
    WouldPush {
        to: &'a Reference,
        digest: &'a str,
        blobs: usize,
        bytes: u64,
        platforms: &'a [String],
    },
    /// The digest file was not written: the image went nowhere.
    DigestFileSkipped(&'a std::path::Path),
}

/// Builds, writes, pushes (to registries reached through `dest`) and signs; returns the
/// image's digest.
pub fn run(
    o: &RunOptions<'_>,
    dest: &Connection,
    progress: &dyn crate::progress::Progress,
    report: &mut dyn FnMut(Event<'_>),
) -> Result<String, Error> {
    let staged = super::build(&o.build)?;
    report(Event::Built {
        warnings: &staged.warnings,
        note: staged.note.as_deref(),
    });
    let written = super::write_layouts(&staged, &o.targets)?;
    let digest = staged.image.digest().to_string();
    for w in &written {
        report(Event::Wrote {
            target: w,
            digest: &digest,
        });
    }
    let mut pushed_any = false;
    if o.push {
        let all =
            super::push_registries(&staged, &o.targets, &o.build, dest, o.chunk_size, progress)?;
        pushed_any = !all.is_empty();
        for (to, pushed) in &all {
            report(Event::Pushed { to, pushed });
        }
        if let Some(key) = o.sign_key {
            for (to, pushed) in &all {
                let limit = o.build.image.max_manifest_size;
                sign(to, &pushed.digest, key, dest, limit, report)?;
            }
        }
    } else {
        let bytes: u64 = staged.image.blobs.iter().map(|b| b.1).sum();
        for t in &o.targets {
            if let Target::Registry(to) = t {
                report(Event::WouldPush {
                    to,
                    digest: &digest,
                    blobs: staged.image.blobs.len(),
                    bytes,
                    platforms: &staged.platforms,
                });
            }
        }
    }
    if let Some(f) = &o.digest_file {
        if written.is_empty() && !pushed_any {
            // A dry run: no digest file says an image went somewhere it did not.
            report(Event::DigestFileSkipped(f));
        } else {
            crate::image::push::write_digest_file(f, &digest)
                .map_err(|e| Error::failed(format_args!("--digest-file {}: {e}", f.display())))?;
        }
    }
    Ok(digest)
}

/// Signs what was pushed to `to` (its digest `digest`) and reports it.
fn sign(
    to: &Reference,
    digest: &str,
    key: &SigningKey,
    dest: &Connection,
    max_manifest_size: u64,
    report: &mut dyn FnMut(Event<'_>),
) -> Result<(), Error> {
    let signed = crate::image::signature::sign_pushed(to, digest, key, dest, max_manifest_size)
        .map_err(|e| Error::failed(crate::text::one_line(&e)))?;
    report(Event::Signed {
        to,
        signed: &signed,
    });
    Ok(())
}

/// What `opreg image push` pushes, where, and with which key it signs.
pub struct PushRun<'a> {
    /// The OCI layout pushed: `oci:DIR[:TAG]`.
    pub source: &'a str,
    /// The registry reference pushed to.
    pub target: &'a str,
    /// How to reach the registry pushed to.
    pub dest: crate::image::ImageOptions,
    pub chunk_size: u64,
    /// Sign the pushed image with this key.
    pub sign_key: Option<&'a SigningKey>,
}

/// Pushes an OCI layout to a registry, then signs it: reported as [`Event::Pushed`] and
/// [`Event::Signed`]; returns the pushed image's digest.
pub fn push(
    o: &PushRun<'_>,
    progress: &dyn crate::progress::Progress,
    report: &mut dyn FnMut(Event<'_>),
) -> Result<String, Error> {
    let (to, pushed) = super::push_layout(o.source, o.target, &o.dest, o.chunk_size, progress)?;
    report(Event::Pushed {
        to: &to,
        pushed: &pushed,
    });
    if let Some(key) = o.sign_key {
        sign(
            &to,
            &pushed.digest,
            key,
            &o.dest.connection,
            o.dest.max_manifest_size,
            report,
        )?;
    }
    Ok(pushed.digest)
}
