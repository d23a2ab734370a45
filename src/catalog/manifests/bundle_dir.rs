//! Bundle directories (`manifests/` + `metadata/`): one bundle each, naming its package,
//! channels and default channel in `metadata/annotations.yaml`.

use super::objects_in;
use crate::catalog::csv::{self, LoadedBundle};
use crate::catalog::Decl;
use crate::diag::{Diagnostic, Rule};
use crate::model::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const ANN_PACKAGE: &str = "operators.operatorframework.io.bundle.package.v1";
const ANN_CHANNELS: &str = "operators.operatorframework.io.bundle.channels.v1";
const ANN_DEFAULT: &str = "operators.operatorframework.io.bundle.channel.default.v1";

pub(super) fn read_bundle_dir(
    dir: &Path,
    diags: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) -> Option<LoadedBundle> {
    let manifests = objects_in(&dir.join("manifests"), warnings);
    let metadata = objects_in(&dir.join("metadata"), warnings)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    bundle_from_objects(dir, manifests, metadata, diags)
}

/// A bundle directory from its decoded files: the objects of `manifests/` (with their paths)
/// and of `metadata/` (annotations, dependencies, properties), in file-name order.
pub fn bundle_from_objects(
    dir: &Path,
    manifests: Vec<(PathBuf, Value)>,
    metadata: Vec<Value>,
    diags: &mut Vec<Diagnostic>,
) -> Option<LoadedBundle> {
    let origin_dir = dir.join("manifests");
    let Some(pos) = manifests.iter().position(|(_, v)| csv::is_csv(v)) else {
        diags.push(
            Diagnostic::error(
                Rule::Parse,
                "no csv in bundle: manifests/ holds no ClusterServiceVersion",
            )
            .at(&Origin::file(origin_dir.display().to_string())),
        );
        return None;
    };
    let csv_path = manifests[pos].0.clone();
    let csv = manifests[pos].1.clone();
    let objects = manifests
        .into_iter()
        .enumerate()
        .filter(|(i, (_, v))| *i == pos || !csv::is_csv(v))
        .map(|(_, (_, v))| v)
        .collect();
    let mut annotations = BTreeMap::new();
    let mut dependencies = Vec::new();
    let mut extra_properties = Vec::new();
    // Every metadata file is tried as each kind; the first non-empty decode of each wins.
    for v in metadata {
        if annotations.is_empty() {
            if let Some(Value::Object(m)) = v.get("annotations") {
                annotations = m
                    .iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                    .collect();
            }
        }
        if dependencies.is_empty() {
            if let Some(Value::Array(a)) = v.get("dependencies") {
                dependencies = a.clone();
            }
        }
        if extra_properties.is_empty() {
            if let Some(Value::Array(a)) = v.get("properties") {
                extra_properties = a.clone();
            }
        }
    }
    if annotations.is_empty() {
        diags.push(
            Diagnostic::error(Rule::Parse, "Could not find annotations file in metadata/")
                .at(&Origin::file(dir.display().to_string())),
        );
        return None;
    }
    Some(LoadedBundle {
        csv,
        objects,
        annotations,
        dependencies,
        extra_properties,
        origin: Origin::file(csv_path.display().to_string()),
    })
}

/// Bundle directories (see [`bundle_from_objects`]) → packages, channels and bundles.
pub fn bundle_dirs_to_decls(bundles: Vec<LoadedBundle>, diags: &mut Vec<Diagnostic>) -> Vec<Decl> {
    let mut by_pkg: BTreeMap<String, Vec<LoadedBundle>> = BTreeMap::new();
    for b in bundles {
        let pkg = b.annotations.get(ANN_PACKAGE).cloned().unwrap_or_default();
        if pkg.is_empty() {
            diags.push(
                Diagnostic::error(
                    Rule::Schema,
                    format!("bundle annotations lack {ANN_PACKAGE}"),
                )
                .at(&b.origin),
            );
            continue;
        }
        by_pkg.entry(pkg).or_default().push(b);
    }
    let mut decls = Vec::new();
    for (pkg, mut bundles) in by_pkg {
        // Oldest first, so channel entries list versions in ascending order.
        bundles.sort_by(|a, b| {
            let va = crate::version::blang::parse_tolerant(&csv::version(&a.csv)).ok();
            let vb = crate::version::blang::parse_tolerant(&csv::version(&b.csv)).ok();
            va.cmp(&vb)
                .then_with(|| csv::name(&a.csv).cmp(&csv::name(&b.csv)))
        });
        let mut channels: BTreeMap<String, Vec<ChannelEntry>> = BTreeMap::new();
        for b in &bundles {
            let chans = b.annotations.get(ANN_CHANNELS).cloned().unwrap_or_default();
            for ch in chans.split(',').filter(|c| !c.is_empty()) {
                channels
                    .entry(ch.to_string())
                    .or_default()
                    .push(csv::entry(&b.csv));
            }
        }
        // Default channel: the annotation of the newest bundle that has one; a lone channel otherwise.
        let newest_default = bundles.iter().rev().find_map(|b| {
            b.annotations
                .get(ANN_DEFAULT)
                .filter(|d| !d.is_empty())
                .cloned()
        });
        let default = newest_default.unwrap_or_else(|| {
            if channels.len() == 1 {
                channels.keys().next().cloned().unwrap_or_default()
            } else {
                String::new()
            }
        });
        let origin = bundles.last().map(|b| b.origin.clone()).unwrap_or_default();
        decls.push(Decl::Package(csv::package(
            &pkg,
            &default,
            bundles.last().map(|b| &b.csv),
            origin.clone(),
        )));
        for (name, entries) in channels {
            decls.push(Decl::Channel(
                pkg.clone(),
                Channel {
                    name,
                    entries,
                    properties: Vec::new(),
                    origin: origin.clone(),
                },
            ));
        }
        for b in &bundles {
            decls.push(Decl::Bundle(csv::bundle(&pkg, b)));
        }
    }
    decls
}
