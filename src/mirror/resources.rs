//! The cluster resources a mirror leaves in `cluster-resources/`, in the shapes oc-mirror v2
//! writes (`internal/pkg/clusterresources`), so that the same `oc apply` works:
//!
//! - `idms-oc-mirror.yaml`: one `ImageDigestMirrorSet` per category (`idms-operator-0` for
//!   bundles and related images, `idms-generic-0` for additional images), for every image
//!   named by digest (with or without a tag);
//! - `itms-oc-mirror.yaml`: the same as `ImageTagMirrorSet`s for every image named by tag
//!   (with or without a digest);
//! - `cs-<repository>-<tag>.yaml`: a `CatalogSource` per catalog, its image the pushed
//!   catalog, optionally on a `targetCatalogSourceTemplate`;
//! - `cc-<repository>-<tag>.yaml`: a `ClusterCatalog` (OLM v1) per catalog.
//!
//! Mapping, as oc-mirror maps: when the destination's path ends with the source's path, the
//! mirror entry is the namespace (`quay.io/ns` to `registry/prefix/ns`), so one entry serves
//! every repository below it; otherwise (a `targetRepo`, folded paths) it is the repository.
//! `--max-nested-paths` forces repository entries. Catalog images get no entry: the catalog
//! resources name them at the mirror directly.
//!
//! Where opreg differs, on purpose: entries, documents and keys come out sorted, so the same
//! mirror writes the same bytes (no `createdAt` annotation); the path-suffix test is per path
//! component; a source without a registry is Docker Hub's (`docker.io/library/...`); a
//! repository name's `_` becomes `-` in a resource name instead of failing; two catalogs that
//! would get the same resource name, and a template that cannot be used, are errors (oc-mirror
//! overwrites the file, and falls back to no template with a log line).

use super::MirrorError;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const IDMS_FILE: &str = "idms-oc-mirror.yaml";
pub const ITMS_FILE: &str = "itms-oc-mirror.yaml";
const CONFIG_API: &str = "config.openshift.io/v1";
const CS_API: &str = "operators.coreos.com/v1alpha1";
const CC_API: &str = "olm.operatorframework.io/v1";
const CS_NAMESPACE: &str = "openshift-marketplace";
/// oc-mirror's suffix length (a tag or digest, truncated).
const SUFFIX_LEN: usize = 12;
/// The longest Kubernetes name label (RFC 1035).
const NAME_MAX: usize = 63;
/// `CatalogSource.spec` fields (operator-framework/api v1alpha1).
const CS_SPEC_FIELDS: [&str; 12] = [
    "address",
    "configMap",
    "description",
    "displayName",
    "grpcPodConfig",
    "icon",
    "image",
    "priority",
    "publisher",
    "secrets",
    "sourceType",
    "updateStrategy",
];

/// What an image is, for the mirror sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A bundle image or one of its related images.
    Operator,
    /// An `additionalImages` entry.
    Additional,
    /// A catalog image (no mirror set entry: see [`CatalogResource`]).
    Catalog,
}

/// One image copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mirrored {
    /// As the catalog or the configuration names it, tag or digest as written.
    pub source: String,
    /// Where it went, `REGISTRY/PREFIX/path` with its tag or digest.
    pub destination: String,
    pub kind: Kind,
}

/// One catalog pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogResource {
    /// As the configuration names it (for messages).
    pub source: String,
    /// The pushed catalog, tag form: the resources' image, as oc-mirror writes it.
    pub destination: String,
    /// The operator entry's `targetCatalogSourceTemplate`.
    pub template: Option<PathBuf>,
}

impl From<&super::plan::PlannedImage> for Mirrored {
    fn from(i: &super::plan::PlannedImage) -> Mirrored {
        Mirrored {
            source: i.wanted.source.clone(),
            destination: i.destination.clone(),
            kind: match i.wanted.origins.first() {
                Some(super::images::Origin::Additional) => Kind::Additional,
                _ => Kind::Operator,
            },
        }
    }
}

impl From<&super::plan::PlannedCatalog> for CatalogResource {
    fn from(c: &super::plan::PlannedCatalog) -> CatalogResource {
        let template = &c.entry.target_catalog_source_template;
        CatalogResource {
            source: c.entry.catalog.clone(),
            destination: c.destination.clone(),
            template: (!template.is_empty()).then(|| PathBuf::from(template)),
        }
    }
}

/// The files of `cluster-resources/`: (file name, YAML), sorted by name. `repository_scope`
/// (oc-mirror sets it with `--max-nested-paths`) makes every mirror entry a repository. The
/// error names the image, catalog or template at fault.
pub fn render(
    mirrored: &[Mirrored],
    catalogs: &[CatalogResource],
    repository_scope: bool,
) -> Result<Vec<(String, String)>, MirrorError> {
    let mut files = Vec::new();
    for mode in [Mode::Digest, Mode::Tag] {
        let sets = mirror_sets(mirrored, mode, repository_scope)?;
        if !sets.is_empty() {
            files.push((mode.file().to_string(), mirror_set_file(mode, &sets)?));
        }
    }
    let mut owners: BTreeMap<String, &str> = BTreeMap::new();
    for c in catalogs {
        for (prefix, doc) in [("cs", catalog_source(c)?), ("cc", cluster_catalog(c)?)] {
            let name = doc["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if let Some(other) = owners.insert(name.clone(), &c.source) {
                return Err(MirrorError::from(format!(
                    "catalogs {other} and {} would both be {prefix} resource {name}: give one a targetCatalog or targetTag",
                    c.source
                )));
            }
            files.push((format!("{name}.yaml"), to_yaml(&doc)?));
        }
    }
    files.sort();
    Ok(files)
}

/// Checks a `targetCatalogSourceTemplate` as [`render`] will use it, so that a mirror can refuse
/// it before copying anything.
pub fn check_template(path: &Path) -> Result<(), MirrorError> {
    from_template(path, "cs-check-0", "registry.invalid/check:0").map(|_| ())
}

/// Writes `files` into `dir` (created if missing), each atomically (a temporary file renamed),
/// mode 0644; then removes the resource files an earlier run left there that `files` lacks
/// (`idms-oc-mirror.yaml`, `itms-oc-mirror.yaml`, `cs-*.yaml`, `cc-*.yaml`), so the directory
/// holds exactly this run's resources. Other files are left alone.
pub fn write(dir: &Path, files: &[(String, String)]) -> Result<(), MirrorError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| MirrorError::from(format!("{}: {e}", dir.display())))?;
    for (name, text) in files {
        if name.contains(['/', '\\']) || !is_resource_file(name) {
            return Err(MirrorError::from(format!(
                "{name}: not a cluster resource file name"
            )));
        }
        super::workspace::write_named(&dir.join(name), text.as_bytes())?;
    }
    let listing =
        std::fs::read_dir(dir).map_err(|e| MirrorError::from(format!("{}: {e}", dir.display())))?;
    for entry in listing.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_resource_file(&name) && !files.iter().any(|(n, _)| *n == name) {
            std::fs::remove_file(entry.path())
                .map_err(|e| MirrorError::from(format!("{}: {e}", entry.path().display())))?;
        }
    }
    Ok(())
}

fn is_resource_file(name: &str) -> bool {
    name == IDMS_FILE
        || name == ITMS_FILE
        || ((name.starts_with("cs-") || name.starts_with("cc-")) && name.ends_with(".yaml"))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Digest,
    Tag,
}

impl Mode {
    fn file(self) -> &'static str {
        match self {
            Mode::Digest => IDMS_FILE,
            Mode::Tag => ITMS_FILE,
        }
    }
}

/// A reference split as oc-mirror splits it.
#[derive(Debug, PartialEq, Eq)]
struct Ref {
    domain: String,
    path: String,
    tag: Option<String>,
    digest: Option<String>,
}

impl Ref {
    /// `domain/path`.
    fn name(&self) -> String {
        join(&self.domain, &self.path)
    }

    /// `domain/namespace`: the path without its last component.
    fn namespace(&self) -> String {
        match self.path.rsplit_once('/') {
            Some((ns, _)) => join(&self.domain, ns),
            None => self.domain.clone(),
        }
    }
}

fn join(domain: &str, path: &str) -> String {
    match (domain.is_empty(), path.is_empty()) {
        (true, _) => path.to_string(),
        (_, true) => domain.to_string(),
        _ => format!("{domain}/{path}"),
    }
}

fn strip_transport(r: &str) -> &str {
    r.strip_prefix("docker://").unwrap_or(r)
}

/// A source reference, checked and with Docker Hub's normalization.
fn source_ref(r: &str) -> Result<Ref, MirrorError> {
    let n = crate::imageref::parse(strip_transport(r))
        .map_err(|e| MirrorError::from(format!("image {r}: {e}")))?;
    Ok(Ref {
        domain: n.domain,
        path: n.path,
        tag: n.tag,
        digest: n.digest,
    })
}

/// A destination reference: the first component is the registry, whatever it looks like.
fn dest_ref(r: &str) -> Result<Ref, MirrorError> {
    let s = strip_transport(r);
    let (name_tag, digest) = match s.split_once('@') {
        Some((n, d)) => (n, Some(d.to_string())),
        None => (s, None),
    };
    let slash = name_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_tag[slash..].rfind(':') {
        Some(i) => (
            &name_tag[..slash + i],
            Some(name_tag[slash + i + 1..].to_string()),
        ),
        None => (name_tag, None),
    };
    let (domain, path) = name.split_once('/').unwrap_or(("", name));
    if path.is_empty() || tag.as_deref() == Some("") || digest.as_deref() == Some("") {
        return Err(MirrorError::from(format!(
            "destination {r}: not an image reference"
        )));
    }
    Ok(Ref {
        domain: domain.to_string(),
        path: path.to_string(),
        tag,
        digest,
    })
}

type Entries = BTreeMap<String, Vec<String>>;

/// The mirror entries of one mode, by category name (`operator`, `generic`).
fn mirror_sets(
    mirrored: &[Mirrored],
    mode: Mode,
    repository_scope: bool,
) -> Result<Vec<(&'static str, Entries)>, MirrorError> {
    let mut operator = Entries::new();
    let mut generic = Entries::new();
    for m in mirrored {
        let entries = match m.kind {
            Kind::Catalog => continue,
            Kind::Operator => &mut operator,
            Kind::Additional => &mut generic,
        };
        let src = source_ref(&m.source)?;
        let dst = dest_ref(&m.destination)?;
        let digest_only = src.digest.is_some() && src.tag.is_none();
        let wanted = match mode {
            Mode::Digest => src.digest.is_some(),
            Mode::Tag => !digest_only,
        };
        if !wanted {
            continue;
        }
        let below = dst.path == src.path || dst.path.ends_with(&format!("/{}", src.path));
        let (source, mirror) = if below && !repository_scope {
            (src.namespace(), dst.namespace())
        } else {
            (src.name(), dst.name())
        };
        let mirrors = entries.entry(source).or_default();
        if !mirrors.contains(&mirror) {
            mirrors.push(mirror);
        }
    }
    Ok([("operator", operator), ("generic", generic)]
        .into_iter()
        .filter(|(_, e)| !e.is_empty())
        .collect())
}

fn mirror_set_file(mode: Mode, sets: &[(&str, Entries)]) -> Result<String, MirrorError> {
    let (kind, prefix, key) = match mode {
        Mode::Digest => ("ImageDigestMirrorSet", "idms", "imageDigestMirrors"),
        Mode::Tag => ("ImageTagMirrorSet", "itms", "imageTagMirrors"),
    };
    let mut out = String::new();
    for (category, entries) in sets {
        let list: Vec<Value> = entries
            .iter()
            .map(|(source, mirrors)| json!({"mirrors": mirrors, "source": source}))
            .collect();
        let mut spec = Map::new();
        spec.insert(key.to_string(), Value::Array(list));
        let doc = json!({
            "apiVersion": CONFIG_API,
            "kind": kind,
            "metadata": {"annotations": annotations(), "name": format!("{prefix}-{category}-0")},
            "spec": spec,
        });
        out.push_str("---\n");
        out.push_str(&to_yaml(&doc)?);
    }
    Ok(out)
}

fn annotations() -> Value {
    json!({"createdBy": "opreg", "opreg_version": env!("CARGO_PKG_VERSION")})
}

/// `<prefix>-<repository>-<tag or digest, 12 characters>`, as oc-mirror names catalog resources.
fn resource_name(prefix: &str, destination: &str) -> Result<String, MirrorError> {
    let r = dest_ref(destination)?;
    let suffix: String = match (&r.tag, &r.digest) {
        (None, Some(d)) => {
            let hex = d.split_once(':').map_or(d.as_str(), |(_, h)| h);
            hex.chars().take(SUFFIX_LEN).collect()
        }
        (tag, _) => tag
            .as_deref()
            .unwrap_or("")
            .chars()
            .take(SUFFIX_LEN)
            .map(rfc1035)
            .collect(),
    };
    let suffix = if suffix.is_empty() {
        "0".into()
    } else {
        suffix
    };
    let repo: String = r
        .path
        .rsplit('/')
        .next()
        .unwrap_or("")
        .chars()
        .map(rfc1035)
        .collect();
    let name = format!("{prefix}-{repo}-{suffix}");
    let ends_ok = name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if name.len() > NAME_MAX || !ends_ok {
        return Err(MirrorError::from(format!(
            "catalog {destination}: resource name {name} is not a DNS label (at most {NAME_MAX} characters, ending in a letter or digit)"
        )));
    }
    Ok(name)
}

/// oc-mirror's `toRFC1035`: lower case letters, digits and `-` stay, anything else is `-`.
fn rfc1035(c: char) -> char {
    let c = c.to_ascii_lowercase();
    if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
        c
    } else {
        '-'
    }
}

fn catalog_source(c: &CatalogResource) -> Result<Value, MirrorError> {
    let name = resource_name("cs", &c.destination)?;
    let image = strip_transport(&c.destination);
    match &c.template {
        Some(t) => from_template(t, &name, image),
        None => Ok(json!({
            "apiVersion": CS_API,
            "kind": "CatalogSource",
            "metadata": {"annotations": annotations(), "name": name, "namespace": CS_NAMESPACE},
            "spec": {"image": image, "sourceType": "grpc"},
        })),
    }
}

fn cluster_catalog(c: &CatalogResource) -> Result<Value, MirrorError> {
    let name = resource_name("cc", &c.destination)?;
    Ok(json!({
        "apiVersion": CC_API,
        "kind": "ClusterCatalog",
        "metadata": {"annotations": annotations(), "name": name},
        "spec": {"priority": 0, "source": {"image": {"ref": strip_transport(&c.destination)}, "type": "Image"}},
    }))
}

/// A `CatalogSource` from a template: the template's metadata and spec, with the name, the
/// namespace, `sourceType: grpc` and the image set (oc-mirror's merge), and opreg's
/// annotations added to the template's.
fn from_template(path: &Path, name: &str, image: &str) -> Result<Value, MirrorError> {
    let at = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| MirrorError::from(format!("targetCatalogSourceTemplate {at}: {e}")))?;
    let doc: Value = yaml_serde::from_str(&text).map_err(|e| {
        MirrorError::from(format!(
            "targetCatalogSourceTemplate {at}: not a YAML document: {e}"
        ))
    })?;
    let bad = |what: String| MirrorError::from(format!("targetCatalogSourceTemplate {at}: {what}"));
    let Value::Object(mut top) = doc else {
        return Err(bad("not a mapping".into()));
    };
    let api = top.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = top.get("kind").and_then(Value::as_str).unwrap_or("");
    if api != CS_API || kind != "CatalogSource" {
        return Err(bad(format!(
            "not a CatalogSource of {CS_API} (apiVersion {api:?}, kind {kind:?})"
        )));
    }
    top.remove("status");
    if let Some(k) = top
        .keys()
        .find(|k| !["apiVersion", "kind", "metadata", "spec"].contains(&k.as_str()))
    {
        return Err(bad(format!("{k} is not a CatalogSource field")));
    }
    let mut meta = object(top.remove("metadata"), "metadata").map_err(|e| bad(e.to_string()))?;
    meta.remove("creationTimestamp");
    let mut notes = object(meta.remove("annotations"), "metadata.annotations")
        .map_err(|e| bad(e.to_string()))?;
    if let Some((k, _)) = notes.iter().find(|(_, v)| !v.is_string()) {
        return Err(bad(format!("metadata.annotations.{k} is not a string")));
    }
    if let Value::Object(ours) = annotations() {
        notes.extend(ours);
    }
    meta.insert("annotations".into(), Value::Object(notes));
    meta.insert("name".into(), name.into());
    meta.insert("namespace".into(), CS_NAMESPACE.into());
    let mut spec = object(top.remove("spec"), "spec").map_err(|e| bad(e.to_string()))?;
    if let Some(k) = spec.keys().find(|k| !CS_SPEC_FIELDS.contains(&k.as_str())) {
        return Err(bad(format!("spec.{k} is not a CatalogSource field")));
    }
    match spec.get("sourceType") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.is_empty() || s == "grpc" => {}
        Some(other) => {
            return Err(bad(format!(
                "spec.sourceType is {other}: a mirrored catalog is served over grpc"
            )))
        }
    }
    if spec
        .get("configMap")
        .is_some_and(|v| !v.is_null() && v != "")
    {
        return Err(bad(
            "spec.configMap is set: a mirrored catalog is an image, not a ConfigMap".into(),
        ));
    }
    spec.remove("configMap");
    spec.insert("sourceType".into(), "grpc".into());
    spec.insert("image".into(), image.into());
    top.insert("metadata".into(), Value::Object(meta));
    top.insert("spec".into(), Value::Object(spec));
    Ok(sorted(Value::Object(top)))
}

/// A mapping member (missing or null: empty).
fn object(v: Option<Value>, what: &str) -> Result<Map<String, Value>, MirrorError> {
    match v {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(MirrorError::from(format!("{what} is not a mapping"))),
    }
}

/// Every mapping's keys in order, whichever map serde_json was built with.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let tree: BTreeMap<String, Value> =
                m.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(tree.into_iter().collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

fn to_yaml(v: &Value) -> Result<String, MirrorError> {
    yaml_serde::to_string(&sorted(v.clone()))
        .map_err(|e| MirrorError::from(format!("writing YAML: {e}")))
}

#[cfg(test)]
#[path = "resources_tests.rs"]
mod tests;
