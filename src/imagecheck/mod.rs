//! Checking every image a catalog names at its registry (`opreg validate --images`): each
//! distinct reference (bundles' `image` and `relatedImages`) looked up once, concurrently, and
//! what is wrong with it reported as a [`Finding`] with a stable rule id.
//!
//! Module map:
//! * this file: the options, the findings and their rules, the report, and [`check`], the one
//!   entry point;
//! * [`refs`]: which images a catalog names, who names them, the platforms each bundle
//!   declares, and which bundles changed since a base catalog;
//! * [`rules`]: the rules that need no registry (pinning, allowed registries) and the findings
//!   a lookup's answer gives;
//! * [`lookup`]: the concurrent lookups (in all and per registry), through mirrors, with the
//!   cache;
//! * [`remote`]: the one file that talks to the registry client, as a narrow surface;
//! * [`cache`]: positive answers per (registry, repository, digest), kept between runs;
//! * [`mirrors`]: ImageDigestMirrorSet, ImageTagMirrorSet and ImageContentSourcePolicy files,
//!   and where a cluster would pull a reference from (its tests in a file of their own beside
//!   it).

pub mod cache;
pub mod lookup;
pub mod mirrors;
pub mod refs;
pub mod remote;
pub mod rules;

use crate::diag::Severity;
use crate::model::Catalog;
use crate::progress::Reporter;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The image rules, each with its stable id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The registry says the repository or the manifest does not exist.
    ImageMissing,
    /// Authentication or authorization failed, or TLS or the network did.
    ImageUnreachable,
    /// Referenced by tag, not by digest.
    ImageUnpinned,
    /// Outside `--allowed-registries`.
    ImageRegistryNotAllowed,
    /// A related image does not serve a platform its bundle declares.
    ImagePlatformMissing,
    /// A bundle image that is an index.
    BundleImageMultiArch,
}

impl Rule {
    pub const ALL: [Rule; 6] = [
        Rule::ImageMissing,
        Rule::ImageUnreachable,
        Rule::ImageUnpinned,
        Rule::ImageRegistryNotAllowed,
        Rule::ImagePlatformMissing,
        Rule::BundleImageMultiArch,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Rule::ImageMissing => "image-missing",
            Rule::ImageUnreachable => "image-unreachable",
            Rule::ImageUnpinned => "image-unpinned",
            Rule::ImageRegistryNotAllowed => "image-registry-not-allowed",
            Rule::ImagePlatformMissing => "image-platform-missing",
            Rule::BundleImageMultiArch => "bundle-image-multi-arch",
        }
    }
}

/// One problem with one image as one bundle names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    pub severity: Severity,
    pub rule: Rule,
    pub package: String,
    pub bundle: String,
    /// The reference as the catalog writes it.
    pub image: String,
    /// Where the answer came from when that is not `image` itself (a mirror).
    pub location: Option<String>,
    pub message: String,
    /// What to change ("" for nothing to add).
    pub help: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let level = self.severity.as_str();
        write!(
            f,
            "{level}[{}]: package {:?}, bundle {:?}, image {:?}: {}",
            self.rule.id(),
            self.package,
            self.bundle,
            self.image,
            self.message
        )?;
        if !self.help.is_empty() {
            write!(f, "\n  help: {}", self.help)?;
        }
        Ok(())
    }
}

/// How to check.
#[derive(Clone, Debug)]
pub struct Options {
    /// Lookups at a time in all (`--parallel`).
    pub parallel: usize,
    /// Lookups at a time per registry.
    pub per_registry: usize,
    /// An unpinned reference is an error, not a warning.
    pub require_digests: bool,
    /// `HOST[/PATH]` prefixes images must come from; empty: any registry.
    pub allowed_registries: Vec<String>,
    /// Where a cluster would pull each reference from.
    pub mirrors: mirrors::Mirrors,
    /// The directory of the positive-results cache; `None`: none kept.
    pub cache_dir: Option<PathBuf>,
    /// Ask the registry even when the cache knows the answer (results are still kept).
    pub no_cache: bool,
    /// How to reach registries.
    pub image: crate::image::ImageOptions,
}

/// At most this many lookups at a time to one registry.
pub const PER_REGISTRY: usize = 8;
/// `--parallel`'s default.
pub const DEFAULT_PARALLEL: usize = 16;

impl Default for Options {
    fn default() -> Self {
        Options {
            parallel: DEFAULT_PARALLEL,
            per_registry: PER_REGISTRY,
            require_digests: false,
            allowed_registries: Vec::new(),
            mirrors: mirrors::Mirrors::default(),
            cache_dir: None,
            no_cache: false,
            image: Default::default(),
        }
    }
}

/// The directory the positive-results cache is kept in: the image cache's (`--image-cache`,
/// else the default), none with `--no-image-cache`.
pub fn cache_dir(image: &crate::image::ImageOptions) -> Option<PathBuf> {
    if image.no_image_cache {
        return None;
    }
    image
        .image_cache
        .clone()
        .or_else(crate::oci::cache::default_dir)
}

/// The counts at the end of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Distinct references checked.
    pub images: usize,
    /// Of those, answered from the cache without a request.
    pub from_cache: usize,
    /// Bundles whose images were checked (all, or those changed since the base).
    pub bundles: usize,
    /// Findings per rule id.
    pub findings: BTreeMap<&'static str, usize>,
    /// Images that could not be found or reached, per registry host.
    pub failures_by_registry: BTreeMap<String, usize>,
}

/// Every finding, sorted, and the summary.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub summary: Summary,
}

impl Report {
    pub fn errors(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count()
    }
    pub fn warnings(&self) -> usize {
        self.findings.len() - self.errors()
    }
}

/// Checks the images of `catalog`'s bundles (with `base`, only those of bundles new or changed
/// since it). Registry trouble is a finding, never an error: only a cache that cannot be
/// written is reported apart, as a warning in the log.
pub fn check(
    catalog: &Catalog,
    base: Option<&Catalog>,
    opts: &Options,
    progress: &Reporter,
) -> Report {
    let (wanted, bundles) = refs::collect(catalog, base);
    let mut findings = Vec::new();
    for w in &wanted {
        findings.extend(rules::offline(w, opts));
    }
    let looked = lookup::run(&wanted, opts, progress);
    let mut summary = Summary {
        images: wanted.len(),
        from_cache: looked.from_cache,
        bundles,
        ..Default::default()
    };
    for (w, answer) in wanted.iter().zip(&looked.answers) {
        let found = rules::online(w, answer);
        if found
            .iter()
            .any(|f| matches!(f.rule, Rule::ImageMissing | Rule::ImageUnreachable))
        {
            *summary
                .failures_by_registry
                .entry(rules::registry_of(&w.reference))
                .or_default() += 1;
        }
        findings.extend(found);
    }
    findings.sort();
    findings.dedup();
    for f in &findings {
        *summary.findings.entry(f.rule.id()).or_default() += 1;
    }
    Report { findings, summary }
}
