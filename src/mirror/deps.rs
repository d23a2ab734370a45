//! Dependencies of the bundles a filter kept, resolved within the same catalog, recursively
//! (oc-mirror parses `skipDependencies` and resolves nothing, so a mirrored operator whose
//! bundle requires another package cannot be installed from the mirror):
//!
//! * `olm.package.required` (`{packageName, versionRange}`, a blang range) is met by a bundle
//!   of that package whose version is in the range;
//! * `olm.gvk.required` (`{group, version, kind}`) by a bundle that provides it (`olm.gvk`);
//!   when no kept bundle does, each package that provides it adds a bundle.
//!
//! A requirement a kept bundle already meets adds nothing. Otherwise the highest version that
//! meets it is added, from the providing package's default channel when one there does, else
//! from any channel; an added package keeps a non-empty default channel (the default channel's
//! head is added when the bundle came from another channel). An unmet requirement and every
//! `olm.constraint` (CEL and compound constraints, which opreg does not evaluate) are warnings
//! naming the bundle and the requirement.

use super::filter::Filtered;
use crate::model::{prop, Bundle, Catalog, Gvk, Package};
use crate::version::blang;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A bundle added to satisfy a requirement.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Added {
    pub package: String,
    pub bundle: String,
    /// The requirement and the bundle that has it, as the plan prints them.
    pub reason: String,
}

/// What resolving added, and what it could not resolve.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    pub added: Vec<Added>,
    pub warnings: Vec<String>,
}

/// Adds to `filtered` the bundles its kept bundles need, taken from `source`.
pub fn resolve(source: &Catalog, filtered: &mut Filtered) -> Resolved {
    let mut out = Resolved::default();
    let mut queue: VecDeque<(String, String)> = filtered
        .kept
        .iter()
        .flat_map(|(p, bs)| bs.iter().map(move |b| (p.clone(), b.clone())))
        .collect();
    let mut looked = BTreeSet::new();
    while let Some((pkg, name)) = queue.pop_front() {
        if !looked.insert((pkg.clone(), name.clone())) {
            continue;
        }
        let Some(bundle) = source.packages.get(&pkg).and_then(|p| p.bundles.get(&name)) else {
            continue;
        };
        for need in requirements(bundle, &mut out.warnings) {
            if satisfied(source, &filtered.kept, &need) {
                continue;
            }
            let picks = providers(source, &need);
            if picks.is_empty() {
                out.warnings.push(format!(
                    "bundle {name:?} of package {pkg:?} requires {need}, which no bundle of the catalog provides"
                ));
                continue;
            }
            for (p, b) in picks {
                let reason = format!("{need}, required by {name:?} of package {pkg:?}");
                for (p, b) in add(source, filtered, &p, &b) {
                    super::filter::because(
                        &mut filtered.why,
                        &p,
                        &b,
                        super::filter::Reason::Dependency {
                            requirement: reason.clone(),
                        },
                    );
                    out.added.push(Added {
                        package: p.clone(),
                        bundle: b.clone(),
                        reason: reason.clone(),
                    });
                    queue.push_back((p, b));
                }
            }
        }
    }
    out
}

/// One requirement of a bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Need {
    Package { name: String, range: String },
    Gvk(Gvk),
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Need::Package { name, range } => write!(f, "package {name:?} in {range:?}"),
            Need::Gvk(g) => write!(f, "API {}/{} {}", g.group, g.version, g.kind),
        }
    }
}

fn requirements(b: &Bundle, warnings: &mut Vec<String>) -> Vec<Need> {
    let mut out: Vec<Need> = b
        .gvks(prop::GVK_REQUIRED)
        .into_iter()
        .map(Need::Gvk)
        .collect();
    for p in b.properties_of(prop::PACKAGE_REQUIRED) {
        let v: serde_json::Value = serde_json::from_str(&p.value).unwrap_or_default();
        let field = |k: &str| v.get(k).and_then(|s| s.as_str()).unwrap_or("").to_string();
        out.push(Need::Package {
            name: field("packageName"),
            range: field("versionRange"),
        });
    }
    for _ in b.properties_of(prop::CONSTRAINT) {
        warnings.push(format!(
            "bundle {:?} of package {:?} has an olm.constraint, which the mirror does not resolve: check its dependencies by hand",
            b.name, b.package
        ));
    }
    out
}

fn version(b: &Bundle) -> Option<semver::Version> {
    semver::Version::parse(&b.version()).ok()
}

fn meets(b: &Bundle, need: &Need) -> bool {
    match need {
        Need::Package { name, range } => {
            b.package == *name
                && match (blang::Range::parse(range), version(b)) {
                    (Ok(r), Some(v)) => r.matches(&v),
                    _ => range.is_empty(),
                }
        }
        Need::Gvk(g) => b.gvks(prop::GVK).contains(g),
    }
}

fn satisfied(source: &Catalog, kept: &BTreeMap<String, BTreeSet<String>>, need: &Need) -> bool {
    kept.iter().any(|(p, names)| {
        let pkg = source.packages.get(p);
        names
            .iter()
            .filter_map(|n| pkg.and_then(|pkg| pkg.bundles.get(n)))
            .any(|b| meets(b, need))
    })
}

/// The bundles to add for `need`: one per providing package (a package requirement has one).
fn providers(source: &Catalog, need: &Need) -> Vec<(String, String)> {
    let packages: Vec<&Package> = match need {
        Need::Package { name, .. } => source.packages.get(name).into_iter().collect(),
        Need::Gvk(_) => source.packages.values().collect(),
    };
    packages
        .into_iter()
        .filter_map(|p| best(p, need).map(|b| (p.name.clone(), b)))
        .collect()
}

/// The highest version of `p` that meets `need`: from the default channel when one there
/// does, else from any channel.
fn best(p: &Package, need: &Need) -> Option<String> {
    let highest = |names: &mut dyn Iterator<Item = &String>| {
        names
            .filter_map(|n| p.bundles.get(n))
            .filter(|b| meets(b, need))
            .max_by(|a, b| {
                version(a)
                    .cmp(&version(b))
                    .then_with(|| a.name.cmp(&b.name))
            })
            .map(|b| b.name.clone())
    };
    let default = p.channels.get(&p.default_channel);
    default
        .and_then(|ch| highest(&mut ch.entries.iter().map(|e| &e.name)))
        .or_else(|| highest(&mut p.bundles.keys()))
}

/// Adds bundle `b` of package `p` to `filtered`, in every channel of the source that holds
/// it, and the default channel's head when none of those is the default channel. Returns the
/// bundles that were not kept before.
fn add(source: &Catalog, filtered: &mut Filtered, p: &str, b: &str) -> Vec<(String, String)> {
    let Some(src) = source.packages.get(p) else {
        return Vec::new();
    };
    let pkg = filtered
        .catalog
        .packages
        .entry(p.to_string())
        .or_insert_with(|| Package {
            channels: BTreeMap::new(),
            bundles: BTreeMap::new(),
            deprecations: None,
            ..src.clone()
        });
    let mut wanted = vec![b.to_string()];
    let holds = |ch: &crate::model::Channel, n: &str| ch.entries.iter().any(|e| e.name == n);
    let in_default = src
        .channels
        .get(&src.default_channel)
        .is_some_and(|ch| holds(ch, b));
    if !in_default && !pkg.channels.contains_key(&src.default_channel) {
        if let Some(head) = src.channels.get(&src.default_channel).and_then(|ch| {
            match crate::graph::channel_head(ch) {
                crate::graph::Head::One(h) => Some(h.to_string()),
                _ => None,
            }
        }) {
            wanted.push(head);
        }
    }
    let kept = filtered.kept.entry(p.to_string()).or_default();
    let mut new = Vec::new();
    for name in wanted {
        for ch in src.channels.values().filter(|ch| holds(ch, &name)) {
            let entry = ch.entries.iter().find(|e| e.name == name).cloned();
            let target =
                pkg.channels
                    .entry(ch.name.clone())
                    .or_insert_with(|| crate::model::Channel {
                        entries: Vec::new(),
                        ..ch.clone()
                    });
            if let Some(e) = entry {
                if !target.entries.iter().any(|t| t.name == e.name) {
                    target.entries.push(e);
                }
            }
        }
        if let Some(bundle) = src.bundles.get(&name) {
            pkg.bundles.insert(name.clone(), bundle.clone());
        }
        if kept.insert(name.clone()) {
            new.push((p.to_string(), name));
        }
    }
    new
}

#[cfg(test)]
#[path = "deps_tests.rs"]
mod tests;
