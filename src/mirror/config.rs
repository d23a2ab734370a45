//! oc-mirror v2's `ImageSetConfiguration` (`apiVersion: mirror.openshift.io/v2alpha1`), the
//! operator part, read so that existing files work unchanged: `mirror.operators[]` with their
//! package and channel filters, `mirror.additionalImages[]`, `mirror.blockedImages[]` and the
//! top-level `archiveSize`. The sections opreg does not mirror (`platform`, `helm`, `samples`)
//! are refused with one line naming them, never ignored.
//!
//! Unknown fields are errors, every one reported at once with its line and column.
//!
//! Validation follows oc-mirror's `internal/pkg/config/validate.go`: duplicate catalogs,
//! packages and channels, versions that are not semver, a channel range mixed with a package
//! range, and blocked-image patterns that are not regular expressions are errors, all reported
//! at once, each naming the catalog, package and channel.

use super::MirrorError;
use serde::Deserialize;

pub const API_VERSION: &str = "mirror.openshift.io/v2alpha1";
pub const KIND: &str = "ImageSetConfiguration";

/// A whole configuration.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageSetConfiguration {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub mirror: Mirror,
    /// The largest archive file, in GB (mirror to disk).
    #[serde(default)]
    pub archive_size: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mirror {
    #[serde(default)]
    pub operators: Vec<Operator>,
    #[serde(default)]
    pub additional_images: Vec<AdditionalImage>,
    #[serde(default)]
    pub blocked_images: Vec<BlockedImage>,
}

/// One catalog and what to take from it.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operator {
    pub catalog: String,
    #[serde(default)]
    pub target_catalog: String,
    #[serde(default)]
    pub target_tag: String,
    #[serde(default)]
    pub full: bool,
    #[serde(default)]
    pub skip_dependencies: bool,
    #[serde(default)]
    pub target_catalog_source_template: String,
    #[serde(default)]
    pub platforms: Vec<PlatformFilter>,
    #[serde(default)]
    pub packages: Vec<Package>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct PlatformFilter {
    pub os: String,
    pub architecture: String,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    pub name: String,
    #[serde(default)]
    pub channels: Vec<Channel>,
    #[serde(default)]
    pub default_channel: String,
    #[serde(default)]
    pub min_version: String,
    #[serde(default)]
    pub max_version: String,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Channel {
    pub name: String,
    #[serde(default)]
    pub min_version: String,
    #[serde(default)]
    pub max_version: String,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdditionalImage {
    pub name: String,
    #[serde(default)]
    pub target_repo: String,
    #[serde(default)]
    pub target_tag: String,
    #[serde(default)]
    pub platforms: Vec<PlatformFilter>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct BlockedImage {
    pub name: String,
}

/// The sections of oc-mirror's configuration that opreg does not mirror.
const NOT_MIRRORED: [&str; 3] = ["platform", "helm", "samples"];

/// Which document a configuration is: oc-mirror's `ImageSetConfiguration` (its `mirror:`
/// section) or its `DeleteImageSetConfiguration` (`delete:`, the same selection without
/// `blockedImages` and `archiveSize`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Mirror,
    Delete,
}

impl Form {
    fn kind(self) -> &'static str {
        match self {
            Form::Mirror => KIND,
            Form::Delete => DELETE_KIND,
        }
    }
    fn section(self) -> &'static str {
        match self {
            Form::Mirror => "mirror",
            Form::Delete => "delete",
        }
    }
    /// Accepted `apiVersion`s: a delete configuration also as oc-mirror's own delete document
    /// shows it.
    fn accepts(self, api: &str) -> bool {
        api == API_VERSION || (self == Form::Delete && api == OLDER_API_VERSION)
    }
}

pub const DELETE_KIND: &str = "DeleteImageSetConfiguration";
const OLDER_API_VERSION: &str = "mirror.openshift.io/v1alpha2";

/// Parses and validates a configuration (YAML or JSON). The error is every problem found, one
/// per line, each naming what it is about.
pub fn parse(text: &str) -> Result<ImageSetConfiguration, MirrorError> {
    parse_form(text, Form::Mirror)
}

/// Parses and validates a `DeleteImageSetConfiguration`; its `delete:` section is returned as
/// the configuration's `mirror` (the same selection rules apply).
pub fn parse_delete(text: &str) -> Result<ImageSetConfiguration, MirrorError> {
    parse_form(text, Form::Delete)
}

fn parse_form(text: &str, form: Form) -> Result<ImageSetConfiguration, MirrorError> {
    let doc: serde_json::Value = yaml_serde::from_str(text)
        .map_err(|e| MirrorError::from(format!("not a YAML document: {e}")))?;
    let want = form.kind();
    let Some(top) = doc.as_object() else {
        return Err(format!("not an {want}: the document is not a mapping").into());
    };
    let api = top.get("apiVersion").and_then(|v| v.as_str()).unwrap_or("");
    let kind = top.get("kind").and_then(|v| v.as_str()).unwrap_or("");
    if kind != want || !form.accepts(api) {
        let article = if form == Form::Mirror { "an" } else { "a" };
        return Err(MirrorError::from(format!(
            "not {article} {want} of {API_VERSION} (apiVersion {api:?}, kind {kind:?})"
        )));
    }
    let section = form.section();
    let other = match form {
        Form::Mirror => Form::Delete.section(),
        Form::Delete => Form::Mirror.section(),
    };
    if top.contains_key(other) {
        return Err(MirrorError::from(format!(
            "{other}: is not allowed in {want}"
        )));
    }
    if form == Form::Delete && !top.contains_key(section) {
        return Err(MirrorError::from(format!(
            "the {want} has no `{section}` section"
        )));
    }
    if let Some(part) = top.get(section).and_then(|m| m.as_object()) {
        let refused: Vec<&str> = NOT_MIRRORED
            .into_iter()
            .filter(|s| part.get(*s).is_some_and(|v| !is_empty(v)))
            .collect();
        if !refused.is_empty() {
            return Err(MirrorError::from(format!(
                "{section}.{} not supported: opreg mirrors operator catalogs and additional images only",
                refused.join(&format!(", {section}."))
            )));
        }
    }
    let mut cleaned = doc.clone();
    let mut unknown = Vec::new();
    if let Some(o) = cleaned.as_object_mut() {
        if let Some(mut part) = o.remove(section) {
            if let Some(m) = part.as_object_mut() {
                for s in NOT_MIRRORED {
                    m.remove(s);
                }
                // A delete configuration has no blocked images.
                if form == Form::Delete && m.remove("blockedImages").is_some() {
                    unknown.push(format!("{section}.blockedImages"));
                }
            }
            o.insert("mirror".into(), part);
        }
        if form == Form::Delete && o.remove("archiveSize").is_some() {
            unknown.push("archiveSize".into());
        }
    }
    // Unknown fields are collected, not refused one at a time: every one is reported, each
    // with its line and column.
    let cfg: ImageSetConfiguration = serde_ignored::deserialize(cleaned, |path| {
        let path = path.to_string();
        unknown.push(match path.strip_prefix("mirror.") {
            Some(rest) => format!("{section}.{rest}"),
            None => path,
        })
    })
    .map_err(|e| MirrorError::from(format!("invalid {want}: {e}")))?;
    if !unknown.is_empty() {
        let at = crate::yaml::key_positions(text);
        // In the order they stand in the file.
        unknown.sort_by_key(|path| at.get(path).copied().unwrap_or((usize::MAX, 0)));
        let lines: Vec<String> = unknown
            .iter()
            .map(|path| {
                let place = match at.get(path) {
                    Some((line, col)) => format!("line {line}, column {col}: "),
                    None => String::new(),
                };
                format!("{place}{path}: {}", unknown_field(path))
            })
            .collect();
        return Err(lines.join("\n").into());
    }
    let errors = validate(&cfg);
    if errors.is_empty() {
        Ok(cfg)
    } else {
        Err(errors.join("\n").into())
    }
}

/// Why a field is refused: a field oc-mirror accepted once is said so, with what to use now.
fn unknown_field(path: &str) -> &'static str {
    let last = path.rsplit('.').next().unwrap_or(path);
    let in_package = path.split('.').rev().nth(2) == Some("packages");
    match (last, in_package) {
        ("bundles", true) => {
            "unknown field: selecting bundles by name (`bundles`, in oc-mirror v2's documentation \
             for OpenShift 4.16 and 4.17) is not supported; select versions with minVersion and \
             maxVersion (both set to a bundle's version for that bundle alone)"
        }
        _ => "unknown field",
    }
}

/// An empty section (`helm: {}`) is no section.
fn is_empty(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => true,
        serde_json::Value::Object(m) => m.values().all(is_empty),
        serde_json::Value::Array(a) => a.is_empty(),
        serde_json::Value::Bool(b) => !b,
        serde_json::Value::String(s) => s.is_empty(),
        serde_json::Value::Number(_) => false,
    }
}

/// Every problem of a parsed configuration, as oc-mirror's validation words them.
pub fn validate(cfg: &ImageSetConfiguration) -> Vec<String> {
    let mut errs = Vec::new();
    let mut catalogs = std::collections::BTreeSet::new();
    for op in &cfg.mirror.operators {
        if op.catalog.is_empty() {
            errs.push("an operator entry has no catalog".to_string());
            continue;
        }
        if !catalogs.insert(unique_name(op)) {
            errs.push(format!(
                "catalog {:?}: duplicate found in configuration",
                unique_name(op)
            ));
        }
        validate_operator(op, &mut errs);
    }
    for b in &cfg.mirror.blocked_images {
        if let Err(e) = regex::Regex::new(&b.name) {
            let why = e
                .to_string()
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .to_string();
            errs.push(format!(
                "blocked image {:?}: invalid regular expression: {why}",
                b.name
            ));
        }
    }
    for a in &cfg.mirror.additional_images {
        if a.name.is_empty() {
            errs.push("an additionalImages entry has no name".to_string());
        }
    }
    errs
}

/// The catalog's name in the configuration: `targetCatalog` (with `targetTag`) when given,
/// else the source reference.
pub fn unique_name(op: &Operator) -> String {
    match (op.target_catalog.as_str(), op.target_tag.as_str()) {
        ("", "") => op.catalog.clone(),
        ("", tag) => format!("{}:{tag}", without_tag(&op.catalog)),
        (name, "") => name.to_string(),
        (name, tag) => format!("{name}:{tag}"),
    }
}

fn without_tag(reference: &str) -> &str {
    let name = reference.split('@').next().unwrap_or(reference);
    match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => &name[..i],
        _ => name,
    }
}

fn semver_ok(v: &str) -> bool {
    crate::version::masterminds::Constraint::parse(&format!("={v}")).is_ok() && semver_lenient(v)
}

/// Masterminds' `NewVersion`: an optional `v`, one to three numeric parts, then pre-release
/// and build metadata.
fn semver_lenient(v: &str) -> bool {
    let v = v.strip_prefix('v').unwrap_or(v);
    let core = v.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    !core.is_empty()
        && parts.len() <= 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn validate_operator(op: &Operator, errs: &mut Vec<String>) {
    let c = &op.catalog;
    let mut packages = std::collections::BTreeSet::new();
    for p in &op.packages {
        if !packages.insert(p.name.as_str()) {
            errs.push(format!(
                "catalog {c:?}: duplicate package entry {:?}",
                p.name
            ));
        }
        for (field, v) in [
            ("maxVersion", &p.max_version),
            ("minVersion", &p.min_version),
        ] {
            if !v.is_empty() && !semver_ok(v) {
                errs.push(format!(
                    "catalog {c:?}: operator {:?}: {field} {v:?} must respect semantic versioning notation",
                    p.name
                ));
            }
        }
        if op.full && !(p.min_version.is_empty() && p.max_version.is_empty()) {
            errs.push(format!(
                "catalog {c:?}: operator {:?}: full: true cannot be mixed with minVersion/maxVersion",
                p.name
            ));
        }
        let mut channels = std::collections::BTreeSet::new();
        for ch in &p.channels {
            if !channels.insert(ch.name.as_str()) {
                errs.push(format!(
                    "catalog {c:?}: operator {:?}: duplicate channel entry {:?}",
                    p.name, ch.name
                ));
            }
            for (field, v) in [
                ("maxVersion", &ch.max_version),
                ("minVersion", &ch.min_version),
            ] {
                if !v.is_empty() && !semver_ok(v) {
                    errs.push(format!(
                        "catalog {c:?}: operator {:?}: channel {:?}: {field} {v:?} must respect semantic versioning notation",
                        p.name, ch.name
                    ));
                }
            }
            let ch_range = !(ch.min_version.is_empty() && ch.max_version.is_empty());
            if ch_range && !(p.min_version.is_empty() && p.max_version.is_empty()) {
                errs.push(format!(
                    "catalog {c:?}: operator {:?}: mixing both filtering by minVersion/maxVersion and filtering by channel minVersion/maxVersion is not allowed",
                    p.name
                ));
            }
            if ch_range && op.full {
                errs.push(format!(
                    "catalog {c:?}: operator {:?}: channel {:?}: full: true cannot be mixed with minVersion/maxVersion",
                    p.name, ch.name
                ));
            }
        }
    }
}

/// The Masterminds range of a filter: `>=min <=max`, either side left out when empty; `None`
/// when both are.
pub fn range(min: &str, max: &str) -> Option<String> {
    match (min.is_empty(), max.is_empty()) {
        (true, true) => None,
        (false, true) => Some(format!(">={min}")),
        (true, false) => Some(format!("<={max}")),
        (false, false) => Some(format!(">={min} <={max}")),
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
