//! `opreg render`'s work, as `opm render` does it: each bundle image and bundle directory is
//! rendered on its own, as one `olm.bundle`; runs of other SOURCEs are read together as one
//! catalog. Nothing is refused for being invalid: every problem goes to the caller, and only a
//! file that cannot be read or parsed is an error.

use crate::diag::Diagnostic;
use crate::error::Result;
use crate::image::opm::{ImageRefTemplate, MigrateLevel};
use crate::image::Resolved;
use crate::model::{Bundle, Catalog};
use std::path::PathBuf;

/// What to render.
#[derive(Clone, Debug, Default)]
pub struct RenderOptions {
    pub sources: Vec<PathBuf>,
    /// The last of opm's migrations to run.
    pub migrate_level: MigrateLevel,
    /// Names the image of bundles from bundle directories (`--alpha-image-ref-template`).
    pub image_ref_template: Option<ImageRefTemplate>,
    pub image: crate::image::ImageOptions,
    pub progress: crate::progress::Reporter,
}

/// The catalogs and lone bundles, in opm's order, ready for [`crate::catalog::fbc::render_all`].
#[derive(Debug, Default)]
pub struct Rendered {
    pub catalogs: Vec<Catalog>,
    pub bundles: Vec<Bundle>,
}

/// Reads `opts.sources` as `opm render` groups them, runs the migrations, and hands each
/// group's problems (warnings, then validation errors) to `problems` as it is read.
pub fn render(opts: &RenderOptions, problems: &mut dyn FnMut(&[Diagnostic])) -> Result<Rendered> {
    let resolved = crate::load::resolve(&opts.sources, &opts.image, &opts.progress)?;
    let mut out = Rendered::default();
    let mut i = 0;
    while i < resolved.paths.len() {
        let bundle_image = lone(&resolved, i);
        let mut j = i + 1;
        while !bundle_image && j < resolved.paths.len() && !lone(&resolved, j) {
            j += 1;
        }
        let read = crate::load::as_read(&resolved, i..j)?;
        problems(&read.problems);
        // Rendering writes what was read; the migration changes only how bundles are written.
        let mut cat = read.catalog;
        if bundle_image {
            for p in cat.packages.values_mut() {
                for mut b in std::mem::take(&mut p.bundles).into_values() {
                    if let (Some(t), true) = (&opts.image_ref_template, b.image.is_empty()) {
                        t.apply(&mut b);
                    }
                    out.bundles.push(b);
                }
            }
        }
        crate::image::opm::migrate(&mut cat, opts.migrate_level);
        if !bundle_image {
            out.catalogs.push(cat);
        }
        i = j;
    }
    if opts.migrate_level != MigrateLevel::None {
        out.bundles
            .iter_mut()
            .for_each(crate::image::opm::bundle_object_to_csv_metadata);
    }
    Ok(out)
}

/// A SOURCE rendered on its own: a bundle image or a bundle directory.
fn lone(resolved: &Resolved, i: usize) -> bool {
    resolved.images[i]
        .as_ref()
        .is_some_and(|img| matches!(img.kind, crate::image::kind::ImageKind::Bundle { .. }))
        || crate::catalog::manifests::is_bundle_dir(&resolved.paths[i])
}
