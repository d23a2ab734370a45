//! Package-manifest directories: a `*.package.yaml` names the package, its channels and their
//! heads; channels are built the way upstream's loader built them: walk `replaces` from each
//! head, and add the real bundles named in `skips`.

use super::{first_doc, is_hidden, objects_in};
use crate::catalog::csv::{self, LoadedBundle};
use crate::catalog::Decl;
use crate::diag::{Diagnostic, Rule};
use crate::model::*;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A package manifest (`*.package.yaml`) from its bytes: the first YAML/JSON document, if the
/// bytes are UTF-8 and it decodes to an object.
pub fn parse_package_manifest(bytes: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(bytes).ok()?;
    crate::yaml::check_flow_depth(text).ok()?;
    let de = yaml_serde::Deserializer::from_str(text).next()?;
    match Value::deserialize(de) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    }
}

pub(super) fn read_package_manifest_dir(
    dir: &Path,
    manifest_file: &Path,
    diags: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) -> Vec<Decl> {
    let origin = Origin::file(manifest_file.display().to_string());
    let Some(manifest) = first_doc(manifest_file) else {
        diags.push(
            Diagnostic::error(
                Rule::Parse,
                "could not decode contents of file into package",
            )
            .at(&origin),
        );
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !is_hidden(e.path()))
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir())
        .map(|e| e.path().to_path_buf())
        .collect();
    dirs.sort();
    let dirs = dirs.iter().map(|d| objects_in(d, warnings)).collect();
    package_manifest_decls(&manifest, origin, dirs, diags, warnings)
}

/// A package-manifest directory from its decoded files: the package manifest (see
/// [`parse_package_manifest`]) and, per directory of the tree in path order, the objects of its
/// files (see [`decode_manifest_file`]).
pub fn package_manifest_decls(
    manifest: &Value,
    origin: Origin,
    dirs: Vec<Vec<(PathBuf, Value)>>,
    diags: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) -> Vec<Decl> {
    let pkg_name = manifest
        .get("packageName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let loaded = loaded_bundles(&pkg_name, dirs, diags);
    let mut channels = Vec::new();
    let mut members: BTreeSet<String> = BTreeSet::new();
    let manifest_channels = manifest
        .get("channels")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for ch in &manifest_channels {
        let name = ch
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let head = ch
            .get("currentCSV")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut entries: Vec<ChannelEntry> = Vec::new();
        let mut seen = BTreeSet::new();
        let mut skipped_real = Vec::new();
        // A cycle ends the walk; validation reports it from the entries.
        let start = loaded.contains_key(&head).then(|| head.clone());
        let chain = crate::graph::walk_replaces(start, |n: &String| {
            let replaces = csv::str_at(&loaded[n].csv, "/spec/replaces");
            loaded.contains_key(replaces).then(|| replaces.to_string())
        });
        for name in chain {
            let e = csv::entry(&loaded[&name].csv);
            skipped_real.extend(e.skips.iter().filter(|s| loaded.contains_key(*s)).cloned());
            seen.insert(name);
            entries.push(e);
        }
        if entries.is_empty() {
            diags.push(
                Diagnostic::error(
                    Rule::Membership,
                    format!("channel head {head:?} is not a bundle of this package (no bundle found for bundlename {head})"),
                )
                .at(&origin)
                .package(&pkg_name)
                .channel(&name),
            );
        }
        // Real bundles named only in skips are members too, with no edges of their own.
        for s in skipped_real {
            if seen.insert(s.clone()) {
                let mut e = csv::entry(&loaded[&s].csv);
                e.replaces.clear();
                e.skips.clear();
                entries.push(e);
            }
        }
        members.extend(entries.iter().map(|e| e.name.clone()));
        channels.push(Channel {
            name,
            entries,
            properties: Vec::new(),
            origin: origin.clone(),
        });
    }
    let mut default = manifest
        .get("defaultChannel")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if default.is_empty() && channels.len() == 1 {
        default = channels[0].name.clone();
    }
    let head_csv = manifest_channels
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(default.as_str()))
        .and_then(|c| c.get("currentCSV").and_then(Value::as_str))
        .and_then(|h| loaded.get(h))
        .map(|b| &b.csv);
    let mut decls = vec![Decl::Package(csv::package(
        &pkg_name,
        &default,
        head_csv,
        origin.clone(),
    ))];
    for (name, b) in &loaded {
        if members.contains(name) {
            decls.push(Decl::Bundle(csv::bundle(&pkg_name, b)));
        } else {
            warnings.push(
                Diagnostic::warning(
                    Rule::Membership,
                    "bundle is not reachable from any channel head; left out",
                )
                .at(&b.origin)
                .package(&pkg_name)
                .bundle(name),
            );
        }
    }
    decls.extend(
        channels
            .into_iter()
            .map(|c| Decl::Channel(pkg_name.clone(), c)),
    );
    decls
}

/// The bundles of a package-manifest tree: every CSV in it, with every non-CSV object of its
/// own directory, by CSV name; a nameless or duplicate CSV is an error in `diags`.
fn loaded_bundles(
    pkg_name: &str,
    dirs: Vec<Vec<(PathBuf, Value)>>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, LoadedBundle> {
    let mut loaded: BTreeMap<String, LoadedBundle> = BTreeMap::new();
    for objs in dirs {
        let others: Vec<Value> = objs
            .iter()
            .filter(|(_, v)| !csv::is_csv(v) && v.get("packageName").is_none())
            .map(|(_, v)| v.clone())
            .collect();
        for (path, csv) in objs.iter().filter(|(_, v)| csv::is_csv(v)) {
            let name = csv::name(csv);
            let o = Origin::file(path.display().to_string());
            if name.is_empty() {
                diags.push(Diagnostic::error(Rule::Parse, "csv name not found").at(&o));
                continue;
            }
            if let Some(prev) = loaded.get(&name) {
                diags.push(
                    Diagnostic::error(
                        Rule::Duplicate,
                        format!("package {pkg_name:?} has duplicate bundle {name:?} (first defined in {})", prev.origin),
                    )
                    .at(&o)
                    .package(pkg_name),
                );
                continue;
            }
            let mut objects = vec![csv.clone()];
            objects.extend(others.iter().cloned());
            loaded.insert(
                name,
                LoadedBundle {
                    csv: csv.clone(),
                    objects,
                    annotations: BTreeMap::new(),
                    dependencies: Vec::new(),
                    extra_properties: Vec::new(),
                    origin: o,
                },
            );
        }
    }
    loaded
}
