//! What the resolver knows about a package and its bundles, and the [`UpgradeGraph`] it reads
//! edges from; the in-memory catalog implements it here, the store in `store::upgrade_query`.

use crate::graph::{classic_chain, EdgeKind, EntryRule};
use crate::model::{prop, Bundle, Catalog, Package};
use crate::version::blang;
use semver::Version;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// What the resolver needs to know about one bundle of the package.
#[derive(Clone, Debug, PartialEq)]
pub struct BundleFacts {
    pub name: String,
    /// The version as written in `olm.package`.
    pub version_text: String,
    /// Strictly parsed; `None` when the bundle has no valid version (it is then never chosen).
    pub version: Option<Version>,
    pub release: Option<String>,
    /// Deprecated by a bundle-level `olm.deprecations` entry.
    pub deprecated: bool,
    /// See [`Bundle::has_dependencies`].
    pub has_dependencies: bool,
    /// Raw JSON values of `olm.maxOpenShiftVersion` properties.
    pub max_openshift: Vec<String>,
    /// Channels listing this bundle.
    pub channels: BTreeSet<String>,
}

impl BundleFacts {
    /// Facts of a model bundle; the store builds a partial [`Bundle`] and calls this too.
    pub fn of(b: &Bundle, deprecated: bool, channels: BTreeSet<String>) -> Self {
        let version_text = b.version();
        BundleFacts {
            name: b.name.clone(),
            version: blang::parse_version(&version_text).ok(),
            version_text,
            release: b.release(),
            deprecated,
            has_dependencies: b.has_dependencies(),
            max_openshift: b
                .properties_of(prop::MAX_OCP)
                .map(|p| p.value.clone())
                .collect(),
            channels,
        }
    }
}

/// What the resolver needs to know about a package.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PackageFacts {
    pub name: String,
    pub default_channel: String,
    /// Channel names, sorted.
    pub channels: Vec<String>,
    pub bundles: BTreeMap<String, BundleFacts>,
}

impl PackageFacts {
    pub fn of(pkg: &Package) -> Self {
        let mut member: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for ch in pkg.channels.values() {
            for e in &ch.entries {
                member.entry(&e.name).or_default().insert(ch.name.clone());
            }
        }
        PackageFacts {
            name: pkg.name.clone(),
            default_channel: pkg.default_channel.clone(),
            channels: pkg.channels.keys().cloned().collect(),
            bundles: pkg
                .bundles
                .values()
                .map(|b| {
                    let chans = member.remove(b.name.as_str()).unwrap_or_default();
                    let dep = pkg.bundle_deprecation(&b.name).is_some();
                    (b.name.clone(), BundleFacts::of(b, dep, chans))
                })
                .collect(),
        }
    }
}

/// The installed bundle resolution starts from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Installed {
    pub name: String,
    #[serde(serialize_with = "ser_display")]
    pub version: Version,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// False for a `name@version` that is not a bundle of the package.
    pub in_catalog: bool,
}

fn ser_display<S: serde::Serializer>(v: &Version, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// The update graph of a catalog, as the resolver reads it. Every answer about edges must come
/// from [`EntryRule`] (directly or through edges materialized by [`super::channel_edges`]).
pub trait UpgradeGraph {
    /// The package's bundles and channels; `None` when there is no such package.
    fn package_facts(&self, package: &str) -> anyhow::Result<Option<PackageFacts>>;
    /// [`super::classic_chain`] of a channel (empty when the channel has no unique head).
    fn classic_chain(&self, package: &str, channel: &str) -> anyhow::Result<Vec<String>>;
    /// The entries of a channel that can be installed over `installed`, with each edge kind.
    fn upgrades_from(
        &self,
        package: &str,
        channel: &str,
        installed: &Installed,
    ) -> anyhow::Result<Vec<(String, EdgeKind)>>;
    /// Every package name, to suggest the nearest when one is not found.
    fn package_names(&self) -> anyhow::Result<Vec<String>>;
}

impl UpgradeGraph for Catalog {
    fn package_facts(&self, package: &str) -> anyhow::Result<Option<PackageFacts>> {
        Ok(self.packages.get(package).map(PackageFacts::of))
    }
    fn package_names(&self) -> anyhow::Result<Vec<String>> {
        Ok(self.packages.keys().cloned().collect())
    }
    fn classic_chain(&self, package: &str, channel: &str) -> anyhow::Result<Vec<String>> {
        Ok(self
            .packages
            .get(package)
            .and_then(|p| p.channels.get(channel))
            .map(|ch| classic_chain(ch).into_iter().map(str::to_string).collect())
            .unwrap_or_default())
    }
    fn upgrades_from(
        &self,
        package: &str,
        channel: &str,
        inst: &Installed,
    ) -> anyhow::Result<Vec<(String, EdgeKind)>> {
        let Some(ch) = self
            .packages
            .get(package)
            .and_then(|p| p.channels.get(channel))
        else {
            return Ok(Vec::new());
        };
        Ok(ch
            .entries
            .iter()
            .flat_map(|e| {
                EntryRule::new(e)
                    .edges_from(&inst.name, Some(&inst.version))
                    .into_iter()
                    .map(|k| (e.name.clone(), k))
            })
            .collect())
    }
}
