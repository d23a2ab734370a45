//! `opreg validate --images`: the flags of the image checks, and their findings and summary
//! printed. The checks are [`crate::imagecheck`], called through [`crate::query::validate`].

use crate::imagecheck::{mirrors::Mirrors, Report, Summary};
use crate::query::ImageChecks;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
// Flattened into `validate`'s own `Args`: a group id of its own, as clap wants each unique.
#[group(id = "validate-images")]
pub struct Args {
    /// After the catalog rules pass, look up every image the catalog names (bundle images and
    /// related images) at its registry, each once: image-missing, image-unreachable,
    /// image-unpinned, image-registry-not-allowed, image-platform-missing and
    /// bundle-image-multi-arch findings.
    #[arg(long)]
    pub images: bool,
    /// Lookups at a time in all (at most 8 at a time to any one registry).
    #[arg(long, value_name = "N", default_value_t = 16, requires = "images",
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub parallel: u16,
    /// An image referenced by tag instead of digest is an error, not a warning.
    #[arg(long, requires = "images")]
    pub require_digests: bool,
    /// Registries (and paths below them) images may come from, comma-separated; matched at a
    /// path boundary, Docker Hub as docker.io/library/...
    #[arg(
        long,
        value_name = "HOST[/PATH],...",
        value_delimiter = ',',
        requires = "images"
    )]
    pub allowed_registries: Vec<String>,
    /// ImageDigestMirrorSet, ImageTagMirrorSet or ImageContentSourcePolicy files: each image is
    /// looked up through its mirrors first, as a cluster would pull it.
    #[arg(long, value_name = "FILE", num_args = 1.., requires = "images")]
    pub image_mirrors: Vec<PathBuf>,
    /// Only check images of bundles that are new or changed since BASE (any SOURCE).
    #[arg(long, value_name = "BASE", requires = "images")]
    pub changed_from: Option<PathBuf>,
    /// Ask the registries even about images an earlier run found (by digest).
    #[arg(long, requires = "images")]
    pub no_cache: bool,
}

impl Args {
    /// The library's image check settings; `None` without --images. A mirror file that
    /// cannot be used is a usage error naming it.
    pub fn checks(
        &self,
        image: &crate::image::ImageOptions,
    ) -> Result<Option<ImageChecks>, crate::error::Error> {
        if !self.images {
            return Ok(None);
        }
        let mirrors = Mirrors::read(&self.image_mirrors)
            .map_err(|e| crate::error::Error::Usage(format!("--image-mirrors: {e}")))?;
        Ok(Some(ImageChecks {
            options: crate::imagecheck::Options {
                parallel: usize::from(self.parallel),
                require_digests: self.require_digests,
                allowed_registries: self
                    .allowed_registries
                    .iter()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect(),
                mirrors,
                cache_dir: crate::imagecheck::cache_dir(image),
                no_cache: self.no_cache,
                image: image.clone(),
                ..Default::default()
            },
            changed_from: self.changed_from.clone(),
        }))
    }
}

/// The findings (warnings too unless `quiet`) and the summary, on stderr.
pub fn print(r: &Report, quiet: bool) {
    for f in &r.findings {
        if !quiet || f.severity == crate::diag::Severity::Error {
            super::output::plain(&f.to_string());
        }
    }
    if !quiet {
        super::output::status(summary_line(&r.summary));
    }
}

fn summary_line(s: &Summary) -> String {
    let mut line = format!(
        "images: {} checked from {} bundle(s), {} answered by the cache",
        s.images, s.bundles, s.from_cache
    );
    if s.findings.is_empty() {
        line.push_str("; no findings");
    } else {
        let per: Vec<String> = s.findings.iter().map(|(r, n)| format!("{r} {n}")).collect();
        line.push_str(&format!("; findings: {}", per.join(", ")));
    }
    if !s.failures_by_registry.is_empty() {
        let per: Vec<String> = s
            .failures_by_registry
            .iter()
            .map(|(h, n)| format!("{h} {n}"))
            .collect();
        line.push_str(&format!(
            "; not found or unreachable per registry: {}",
            per.join(", ")
        ));
    }
    line
}
