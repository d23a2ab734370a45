//! Package-manifest directories and bundle directories: CSVs and CRDs → declarations.
//!
//! Both layouts hold ClusterServiceVersions (CSVs) next to the objects they ship. A
//! package-manifest directory has a `*.package.yaml` naming channel heads; channels are built
//! the way upstream's loader built them: walk `replaces` from each head, and add the real bundles
//! named in `skips`. A bundle directory (`manifests/` + `metadata/annotations.yaml`) names its
//! package and channels itself; a tree of bundle directories makes up packages.
//!
//! Either way a bundle's properties are derived once, by [`bundle_from_csv`]: `olm.package`, the
//! CSV's `olm.properties` annotation, `olm.gvk` for provided APIs, `olm.gvk.required` and
//! `olm.package.required` for dependencies, and one `olm.bundle.object` per manifest, sorted by
//! (type, value) as `opm render` does.

use super::Decl;
use crate::diag::{Diagnostic, Rule};
use crate::json;
use crate::model::*;
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ANN_PACKAGE: &str = "operators.operatorframework.io.bundle.package.v1";
const ANN_CHANNELS: &str = "operators.operatorframework.io.bundle.channels.v1";
const ANN_DEFAULT: &str = "operators.operatorframework.io.bundle.channel.default.v1";

/// True when the tree holds a package manifest or a bundle directory (checked a few levels deep).
pub fn looks_like_manifests(root: &Path) -> bool {
    walkdir::WalkDir::new(root)
        .max_depth(5)
        .into_iter()
        .filter_map(Result::ok)
        .any(|e| {
            let p = e.path();
            if e.file_type().is_dir() {
                is_bundle_dir(p)
            } else {
                is_package_manifest_file(p)
            }
        })
}

fn is_hidden(p: &Path) -> bool {
    p.file_name()
        .map(|n| n.to_string_lossy().starts_with('.'))
        .unwrap_or(false)
}

fn is_bundle_dir(p: &Path) -> bool {
    p.join("manifests").is_dir() && p.join("metadata").is_dir()
}

fn is_package_manifest_file(p: &Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    (name.ends_with("package.yaml") || name.ends_with("package.yml"))
        && first_doc(p).is_some_and(|v| v.get("packageName").is_some())
}

/// The first YAML/JSON document of a file, if it decodes to an object.
fn first_doc(p: &Path) -> Option<Value> {
    parse_package_manifest(&std::fs::read(p).ok()?)
}

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

fn sorted_children(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v.retain(|p| !is_hidden(p));
    v
}

/// A CSV plus the other objects shipped beside it (one bundle directory, read).
pub struct LoadedBundle {
    csv: Value,
    objects: Vec<Value>,
    annotations: BTreeMap<String, String>,
    dependencies: Vec<Value>,
    extra_properties: Vec<Value>,
    origin: Origin,
}

/// Reads every package manifest and bundle directory under `root`.
pub fn read_tree(
    root: &Path,
    diags: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) -> Vec<Decl> {
    let mut decls = Vec::new();
    let mut bundle_dirs = Vec::new();
    let mut walk = Walk::default();
    visit(
        root,
        &mut walk,
        &mut decls,
        &mut bundle_dirs,
        diags,
        warnings,
    );
    decls.extend(bundle_dirs_to_decls(bundle_dirs, diags));
    decls
}

/// Directories of the tree walk, by real path. Directory symlinks are followed, so a symlink
/// can lead back to a directory being walked (a loop: an error naming the link) or to one
/// already read (read once; a warning).
#[derive(Default)]
struct Walk {
    ancestors: Vec<PathBuf>,
    seen: BTreeSet<PathBuf>,
}

fn visit(
    dir: &Path,
    walk: &mut Walk,
    decls: &mut Vec<Decl>,
    bundle_dirs: &mut Vec<LoadedBundle>,
    diags: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) {
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let at = Origin::file(dir.display().to_string());
    if let Some(a) = walk.ancestors.iter().find(|a| **a == real) {
        let msg = format!(
            "symlink loop: this directory is {}, which contains it",
            a.display()
        );
        diags.push(Diagnostic::error(Rule::Parse, msg).at(&at));
        return;
    }
    if !walk.seen.insert(real.clone()) {
        let msg = format!("directory {} was already read; skipped", real.display());
        warnings.push(Diagnostic::warning(Rule::Parse, msg).at(&at));
        return;
    }
    walk.ancestors.push(real);
    visit_dir(dir, walk, decls, bundle_dirs, diags, warnings);
    walk.ancestors.pop();
}

fn visit_dir(
    dir: &Path,
    walk: &mut Walk,
    decls: &mut Vec<Decl>,
    bundle_dirs: &mut Vec<LoadedBundle>,
    diags: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) {
    if is_bundle_dir(dir) {
        if let Some(b) = read_bundle_dir(dir, diags, warnings) {
            bundle_dirs.push(b);
        }
        return;
    }
    let children = sorted_children(dir);
    if let Some(pm) = children
        .iter()
        .find(|p| p.is_file() && is_package_manifest_file(p))
    {
        decls.extend(read_package_manifest_dir(dir, pm, diags, warnings));
        return;
    }
    if dir.join("metadata").is_dir() && !dir.join("manifests").is_dir() {
        warnings.push(
            Diagnostic::warning(
                Rule::Parse,
                "directory has metadata/ but no manifests/; not a bundle, skipped",
            )
            .at(&Origin::file(dir.display().to_string())),
        );
        return;
    }
    for c in children.iter().filter(|p| p.is_dir()) {
        visit(c, walk, decls, bundle_dirs, diags, warnings);
    }
}

/// Decodes the first document of each regular file in `dir` (not recursing).
fn objects_in(dir: &Path, warnings: &mut Vec<Diagnostic>) -> Vec<(PathBuf, Value)> {
    let mut out = Vec::new();
    for p in sorted_children(dir).into_iter().filter(|p| p.is_file()) {
        match std::fs::read(&p) {
            Ok(bytes) => {
                if let Some(v) = decode_manifest_file(&p, &bytes, warnings) {
                    out.push((p, v));
                }
            }
            Err(e) => warnings.push(
                Diagnostic::warning(Rule::Parse, format!("file skipped: {e}"))
                    .at(&Origin::file(p.display().to_string())),
            ),
        }
    }
    out
}

/// One manifest file from its bytes: its first YAML/JSON document, if that is an object. A
/// file that does not decode, or is not UTF-8 (Go's YAML decoder rejects it too), is skipped
/// with a warning.
pub fn decode_manifest_file(
    path: &Path,
    bytes: &[u8],
    warnings: &mut Vec<Diagnostic>,
) -> Option<Value> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(
                Diagnostic::warning(
                    Rule::Parse,
                    format!("file skipped, it is not valid UTF-8: {e}"),
                )
                .at(&Origin::file(path.display().to_string())),
            );
            return None;
        }
    };
    if let Err(e) = crate::yaml::check_flow_depth(text) {
        warnings.push(
            Diagnostic::warning(
                Rule::Parse,
                format!("file skipped, it does not decode: {e}"),
            )
            .at(&Origin::file(path.display().to_string())),
        );
        return None;
    }
    let doc = yaml_serde::Deserializer::from_str(text)
        .next()
        .map(Value::deserialize);
    match doc {
        Some(Ok(v @ Value::Object(_))) => Some(v),
        Some(Err(e)) => {
            warnings.push(
                Diagnostic::warning(
                    Rule::Parse,
                    format!("file skipped, it does not decode: {e}"),
                )
                .at(&Origin::file(path.display().to_string())),
            );
            None
        }
        _ => None,
    }
}

fn kind_of(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
}

fn read_bundle_dir(
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
    let Some(pos) = manifests
        .iter()
        .position(|(_, v)| kind_of(v) == "ClusterServiceVersion")
    else {
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
        .filter(|(i, (_, v))| *i == pos || kind_of(v) != "ClusterServiceVersion")
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

fn csv_str<'a>(csv: &'a Value, path: &[&str]) -> &'a str {
    let mut v = csv;
    for p in path {
        match v.get(p) {
            Some(x) => v = x,
            None => return "",
        }
    }
    v.as_str().unwrap_or("")
}

fn csv_name(csv: &Value) -> String {
    csv_str(csv, &["metadata", "name"]).to_string()
}

fn csv_skips(csv: &Value) -> Vec<String> {
    csv.pointer("/spec/skips")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn csv_entry(csv: &Value) -> ChannelEntry {
    ChannelEntry {
        name: csv_name(csv),
        replaces: csv_str(csv, &["spec", "replaces"]).to_string(),
        skips: csv_skips(csv),
        skip_range: csv_str(csv, &["metadata", "annotations", "olm.skipRange"]).to_string(),
    }
}

fn csv_version(csv: &Value) -> String {
    match csv.pointer("/spec/version") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn prop(ty: &str, value: &Value) -> Property {
    Property {
        r#type: ty.to_string(),
        value: json::canonical(value),
    }
}

fn gvk_value(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

/// APIs provided by a bundle: every version of every CRD it ships, plus owned APIServices.
fn provided_apis(csv: &Value, objects: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for o in objects
        .iter()
        .filter(|o| kind_of(o) == "CustomResourceDefinition")
    {
        let group = o
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = o
            .pointer("/spec/names/kind")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut versions: Vec<&str> = o
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.get("name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(v) = o.pointer("/spec/version").and_then(Value::as_str) {
            versions.push(v);
        }
        for v in versions {
            out.push(gvk_value(group, v, kind));
        }
    }
    if let Some(owned) = csv
        .pointer("/spec/apiservicedefinitions/owned")
        .and_then(Value::as_array)
    {
        for a in owned {
            out.push(gvk_value(
                a.get("group").and_then(Value::as_str).unwrap_or(""),
                a.get("version").and_then(Value::as_str).unwrap_or(""),
                a.get("kind").and_then(Value::as_str).unwrap_or(""),
            ));
        }
    }
    out
}

/// APIs a bundle requires: CSV required CRDs (`<plural>.<group>`) and required APIServices.
fn required_apis(csv: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(req) = csv
        .pointer("/spec/customresourcedefinitions/required")
        .and_then(Value::as_array)
    {
        for r in req {
            let name = r.get("name").and_then(Value::as_str).unwrap_or("");
            let group = name.split_once('.').map(|(_, g)| g).unwrap_or("");
            out.push(gvk_value(
                group,
                r.get("version").and_then(Value::as_str).unwrap_or(""),
                r.get("kind").and_then(Value::as_str).unwrap_or(""),
            ));
        }
    }
    if let Some(req) = csv
        .pointer("/spec/apiservicedefinitions/required")
        .and_then(Value::as_array)
    {
        for a in req {
            out.push(gvk_value(
                a.get("group").and_then(Value::as_str).unwrap_or(""),
                a.get("version").and_then(Value::as_str).unwrap_or(""),
                a.get("kind").and_then(Value::as_str).unwrap_or(""),
            ));
        }
    }
    out
}

/// Builds the model bundle for a CSV and its objects: the one place manifest-derived
/// properties are computed.
fn bundle_from_csv(package: &str, b: &LoadedBundle) -> Bundle {
    let csv = &b.csv;
    let mut props: Vec<Property> = Vec::new();
    let mut pkg = json!({"packageName": package, "version": csv_version(csv)});
    match csv.pointer("/spec/release") {
        Some(Value::String(s)) if !s.is_empty() => pkg["release"] = json!(s),
        Some(Value::Number(n)) => pkg["release"] = json!(n.to_string()),
        _ => {}
    }
    props.push(prop(prop::PACKAGE, &pkg));
    if let Some(ann) = csv
        .pointer("/metadata/annotations/olm.properties")
        .and_then(Value::as_str)
    {
        if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(ann) {
            for it in items {
                if let Some(ty) = it.get("type").and_then(Value::as_str) {
                    props.push(prop(ty, it.get("value").unwrap_or(&Value::Null)));
                }
            }
        }
    }
    for g in provided_apis(csv, &b.objects) {
        props.push(prop(prop::GVK, &g));
    }
    for g in required_apis(csv) {
        props.push(prop(prop::GVK_REQUIRED, &g));
    }
    for d in &b.dependencies {
        let ty = d.get("type").and_then(Value::as_str).unwrap_or("");
        let value = d.get("value").cloned().unwrap_or(Value::Null);
        match ty {
            "olm.gvk" => props.push(prop(prop::GVK_REQUIRED, &value)),
            "olm.package" => {
                let v = json!({
                    "packageName": value.get("packageName").cloned().unwrap_or(Value::Null),
                    "versionRange": value.get("version").cloned().unwrap_or(Value::Null),
                });
                props.push(prop(prop::PACKAGE_REQUIRED, &v))
            }
            "" => {}
            other => props.push(prop(other, &value)),
        }
    }
    for p in &b.extra_properties {
        if let Some(ty) = p.get("type").and_then(Value::as_str) {
            props.push(prop(ty, p.get("value").unwrap_or(&Value::Null)));
        }
    }
    for o in &b.objects {
        let data = base64::engine::general_purpose::STANDARD.encode(json::canonical(o));
        props.push(prop(prop::BUNDLE_OBJECT, &json!({ "data": data })));
    }
    props.sort();
    props.dedup();
    let mut related = Vec::new();
    let mut seen = BTreeSet::new();
    if let Some(ri) = csv.pointer("/spec/relatedImages").and_then(Value::as_array) {
        for r in ri {
            let image = r
                .get("image")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if !image.is_empty() && seen.insert(image.clone()) {
                related.push(RelatedImage {
                    name: r
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    image,
                });
            }
        }
    }
    if let Some(deps) = csv
        .pointer("/spec/install/spec/deployments")
        .and_then(Value::as_array)
    {
        for d in deps {
            for key in ["initContainers", "containers"] {
                let path = format!("/spec/template/spec/{key}");
                for c in d
                    .pointer(&path)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let image = c
                        .get("image")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    if !image.is_empty() && seen.insert(image.clone()) {
                        related.push(RelatedImage {
                            name: String::new(),
                            image,
                        });
                    }
                }
            }
        }
    }
    Bundle {
        name: csv_name(csv),
        package: package.to_string(),
        image: String::new(),
        properties: props,
        related_images: related,
        origin: b.origin.clone(),
        spilled: false,
    }
}

/// Package-level fields taken from a representative CSV (the default channel's head).
fn package_from_csv(
    name: &str,
    default_channel: &str,
    csv: Option<&Value>,
    origin: Origin,
) -> Package {
    let icon = csv
        .and_then(|c| c.pointer("/spec/icon/0"))
        .map(|i| Icon {
            base64data: i
                .get("base64data")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            mediatype: i
                .get("mediatype")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        })
        .filter(|i| !i.base64data.is_empty());
    Package {
        name: name.to_string(),
        default_channel: default_channel.to_string(),
        icon,
        description: csv
            .map(|c| csv_str(c, &["spec", "description"]).to_string())
            .unwrap_or_default(),
        origin,
        ..Default::default()
    }
}

fn read_package_manifest_dir(
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
    // Bundles: every CSV in the tree, with every non-CSV object of its own directory.
    let mut loaded: BTreeMap<String, LoadedBundle> = BTreeMap::new();
    for objs in dirs {
        let others: Vec<Value> = objs
            .iter()
            .filter(|(_, v)| {
                kind_of(v) != "ClusterServiceVersion" && v.get("packageName").is_none()
            })
            .map(|(_, v)| v.clone())
            .collect();
        for (path, csv) in objs
            .iter()
            .filter(|(_, v)| kind_of(v) == "ClusterServiceVersion")
        {
            let name = csv_name(csv);
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
                    .package(&pkg_name),
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
        let mut cur = head.clone();
        while let Some(b) = loaded.get(&cur) {
            if !seen.insert(cur.clone()) {
                break; // a cycle: validation reports it from the entries
            }
            let e = csv_entry(&b.csv);
            skipped_real.extend(e.skips.iter().filter(|s| loaded.contains_key(*s)).cloned());
            cur = e.replaces.clone();
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
                let mut e = csv_entry(&loaded[&s].csv);
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
    let mut decls = vec![Decl::Package(package_from_csv(
        &pkg_name,
        &default,
        head_csv,
        origin.clone(),
    ))];
    for (name, b) in &loaded {
        if members.contains(name) {
            decls.push(Decl::Bundle(bundle_from_csv(&pkg_name, b)));
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
            let va = crate::graph::blang::parse_tolerant(&csv_version(&a.csv)).ok();
            let vb = crate::graph::blang::parse_tolerant(&csv_version(&b.csv)).ok();
            va.cmp(&vb)
                .then_with(|| csv_name(&a.csv).cmp(&csv_name(&b.csv)))
        });
        let mut channels: BTreeMap<String, Vec<ChannelEntry>> = BTreeMap::new();
        for b in &bundles {
            let chans = b.annotations.get(ANN_CHANNELS).cloned().unwrap_or_default();
            for ch in chans.split(',').filter(|c| !c.is_empty()) {
                channels
                    .entry(ch.to_string())
                    .or_default()
                    .push(csv_entry(&b.csv));
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
        decls.push(Decl::Package(package_from_csv(
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
            decls.push(Decl::Bundle(bundle_from_csv(&pkg, b)));
        }
    }
    decls
}
