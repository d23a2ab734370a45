//! Validation of an assembled catalog: upstream's FBC model rules, reported all at once.
//!
//! Structural problems (duplicates, unknown packages) are found while assembling
//! ([`crate::catalog::build`]); this module checks everything the model can express: names,
//! default channels, channel heads, replaces cycles, stranded bundles, `olm.package`
//! properties and versions, skipRanges, images, deprecation references, and property shapes.
//! Graph questions are answered by [`crate::graph`]; nothing here re-derives an edge.
//! Messages reuse upstream's key words so that searching for them finds both tools.

pub mod upgrade_lint;

use crate::diag::{Diagnostic, Rule};
use crate::graph::{self, Head};
use crate::model::*;
use crate::version::blang;
use base64::Engine;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A catalog that passed validation: the only kind the store writes. Only [`check`] makes one.
#[derive(Clone, Debug)]
pub struct ValidCatalog(Catalog);

impl ValidCatalog {
    pub fn into_inner(self) -> Catalog {
        self.0
    }
}

impl std::ops::Deref for ValidCatalog {
    type Target = Catalog;
    fn deref(&self) -> &Catalog {
        &self.0
    }
}

/// Validates `cat`, adding what it finds to `errors` and `warnings`. `errors` may already hold
/// problems found while reading the catalog; they make it invalid too. The catalog comes back
/// as a [`ValidCatalog`] when there are no errors at all, as it was otherwise.
pub fn check(
    cat: Catalog,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) -> Result<ValidCatalog, Catalog> {
    for d in validate(&cat) {
        if d.is_error() {
            errors.push(d);
        } else {
            warnings.push(d);
        }
    }
    if errors.is_empty() {
        Ok(ValidCatalog(cat))
    } else {
        Err(cat)
    }
}

/// Runs [`bundle_rules`] on a whole bundle as it is read, and returns the light copy a streaming
/// ingest keeps once the whole bundle has gone to the store ([`Body::Light`]).
pub fn bundle_rules_then_lighten(b: &Bundle, out: &mut Vec<Diagnostic>) -> Bundle {
    bundle_rules(b, out);
    Bundle {
        name: b.name.clone(),
        package: b.package.clone(),
        image: b.image.clone(),
        properties: b
            .properties
            .iter()
            .filter(|p| p.r#type != prop::CSV_METADATA && p.r#type != prop::BUNDLE_OBJECT)
            .cloned()
            .collect(),
        related_images: b.related_images.clone(),
        origin: b.origin.clone(),
        body: Body::Light(RulesRan::new()),
    }
}

/// Checks the whole catalog; returns every error and warning found.
pub fn validate(cat: &Catalog) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for pkg in cat.packages.values() {
        validate_package(pkg, &mut out);
    }
    out
}

/// DNS-1123 label: lowercase alphanumerics and '-', alphanumeric at both ends, at most 63 chars.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn validate_package(pkg: &Package, out: &mut Vec<Diagnostic>) {
    let p = pkg.name.as_str();
    let err = |rule: Rule, msg: String| Diagnostic::error(rule, msg).at(&pkg.origin).package(p);
    if !is_dns1123_label(p) {
        out.push(err(
            Rule::PackageName,
            format!(
                "invalid package name {p:?}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', start and end with an alphanumeric character, and be at most 63 characters"
            ),
        ));
    }
    if pkg.channels.is_empty() {
        out.push(err(
            Rule::Empty,
            "package must contain at least one channel".into(),
        ));
    }
    if pkg.default_channel.is_empty() {
        out.push(err(
            Rule::DefaultChannel,
            "default channel must be set".into(),
        ));
    } else if !pkg.channels.contains_key(&pkg.default_channel) {
        out.push(err(
            Rule::DefaultChannel,
            format!(
                "default channel {:?} not found in channels list",
                pkg.default_channel
            ),
        ));
    }

    // Duplicate versions over the whole package.
    let mut by_version: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for b in pkg.bundles.values() {
        if let Ok(v) = blang::parse_version(&b.version()) {
            let mut key = v.to_string();
            if let Some(r) = b.release() {
                key = format!("{key}-{r}");
            }
            by_version.entry(key).or_default().push(&b.name);
        }
    }
    let dups: Vec<String> = by_version
        .iter()
        .filter(|(_, names)| names.len() > 1)
        .map(|(v, names)| format!("{{{v}: [{}]}}", names.join(", ")))
        .collect();
    if !dups.is_empty() {
        out.push(err(
            Rule::Duplicate,
            format!("duplicate versions found in bundles: [{}]", dups.join(" ")),
        ));
    }

    let mut members: BTreeSet<&str> = BTreeSet::new();
    for ch in pkg.channels.values() {
        validate_channel(pkg, ch, out);
        members.extend(ch.entries.iter().map(|e| e.name.as_str()));
    }
    for b in pkg.bundles.values() {
        if !members.contains(b.name.as_str()) {
            out.push(
                Diagnostic::error(
                    Rule::Membership,
                    format!(
                        "package {p:?}, bundle {:?} not found in any channel entries",
                        b.name
                    ),
                )
                .at(&b.origin)
                .package(p)
                .bundle(&b.name),
            );
        }
        match b.body {
            Body::Whole => bundle_rules(b, out),
            Body::Light(_) => {} // checked whole, as it was read
        }
    }
    validate_deprecations(pkg, out);
}

fn validate_channel(pkg: &Package, ch: &Channel, out: &mut Vec<Diagnostic>) {
    let p = pkg.name.as_str();
    let err = |rule: Rule, msg: String| {
        Diagnostic::error(rule, msg)
            .at(&ch.origin)
            .package(p)
            .channel(&ch.name)
    };
    if ch.entries.is_empty() {
        out.push(err(
            Rule::Empty,
            "channel must contain at least one bundle".into(),
        ));
        return;
    }
    let mut seen = BTreeSet::new();
    for e in &ch.entries {
        if !seen.insert(e.name.as_str()) {
            out.push(err(
                Rule::Duplicate,
                format!(
                    "invalid package {p:?}, channel {:?}: duplicate entry {:?}",
                    ch.name, e.name
                ),
            ));
        }
        for (i, s) in e.skips.iter().enumerate() {
            if s.is_empty() {
                out.push(err(
                    Rule::Schema,
                    format!("entry {:?}: skip[{i}] is empty", e.name),
                ));
            }
        }
        if !e.skip_range.is_empty() {
            if let Err(x) = blang::Range::parse(&e.skip_range) {
                out.push(err(
                    Rule::SkipRange,
                    format!(
                        "entry {:?}: invalid skipRange {:?}: {x}",
                        e.name, e.skip_range
                    ),
                ));
            }
        }
    }
    let missing: Vec<&str> = ch
        .entries
        .iter()
        .map(|e| e.name.as_str())
        .filter(|n| !pkg.bundles.contains_key(*n))
        .collect();
    if !missing.is_empty() {
        out.push(err(
            Rule::Membership,
            format!(
                "no olm.bundle blobs found in package {p:?} for olm.channel entries [{}]",
                missing.join(" ")
            ),
        ));
    }
    match graph::channel_head(ch) {
        Head::None => out.push(err(
            Rule::ChannelHead,
            "no channel head found in graph".into(),
        )),
        Head::Many(heads) => out.push(err(
            Rule::ChannelHead,
            format!(
                "multiple channel heads found in graph: {}",
                heads.join(", ")
            ),
        )),
        Head::One(head) => {
            let walk = graph::replaces_walk(ch, head);
            if let Some(cyc) = walk.cycle {
                out.push(err(
                    Rule::Cycle,
                    format!(
                        "detected cycle in replaces chain of upgrade graph: {}",
                        cyc.join(" -> ")
                    ),
                ));
            } else if !walk.stranded.is_empty() {
                out.push(err(
                    Rule::Stranded,
                    format!(
                        "channel contains one or more stranded bundles: {}",
                        walk.stranded.join(", ")
                    ),
                ));
            }
        }
    }
}

/// The rules that read one bundle alone: its `olm.package` property, property shapes, image.
/// [`validate`] runs them on every bundle not already checked; a streaming ingest runs them as
/// each bundle is read, before it keeps only a light copy ([`bundle_rules_then_lighten`]).
pub fn bundle_rules(b: &Bundle, out: &mut Vec<Diagnostic>) {
    let p = b.package.as_str();
    let err = |rule: Rule, msg: String| {
        Diagnostic::error(rule, msg)
            .at(&b.origin)
            .package(p)
            .bundle(&b.name)
    };
    let pkg_props: Vec<&Property> = b.properties_of(prop::PACKAGE).collect();
    if pkg_props.len() != 1 {
        out.push(err(
            Rule::PackageProperty,
            format!(
                "package {p:?} bundle {:?} must have exactly 1 \"olm.package\" property, found {}",
                b.name,
                pkg_props.len()
            ),
        ));
    }
    let mut csv_metadata = 0;
    let mut has_objects = false;
    let mut max_ocp = Vec::new();
    for (i, prop) in b.properties.iter().enumerate() {
        // Most of a catalog's bytes are in olm.csv.metadata and custom properties, whose
        // contents no rule reads: check only that they are JSON (and, for the metadata, an
        // object) without building a tree.
        let needs_tree = matches!(
            prop.r#type.as_str(),
            prop::PACKAGE
                | prop::GVK
                | prop::GVK_REQUIRED
                | prop::PACKAGE_REQUIRED
                | prop::BUNDLE_OBJECT
                | prop::MAX_OCP
        );
        if !needs_tree {
            let metadata = prop.r#type == prop::CSV_METADATA;
            let shape = serde_json::from_str::<serde::de::IgnoredAny>(&prop.value)
                .map_err(|e| e.to_string())
                .and_then(|_| {
                    csv_metadata += usize::from(metadata);
                    if metadata && !prop.value.trim_start().starts_with('{') {
                        Err("expected an object".to_string())
                    } else {
                        Ok(())
                    }
                });
            if let Err(e) = shape {
                out.push(err(
                    Rule::Property,
                    format!("parse property[{i}] of type {:?}: {e}", prop.r#type),
                ));
            }
            continue;
        }
        let v: Value = match serde_json::from_str(&prop.value) {
            Ok(v) => v,
            Err(e) => {
                out.push(err(
                    Rule::Property,
                    format!("parse property[{i}] of type {:?}: {e}", prop.r#type),
                ));
                continue;
            }
        };
        let shape = match prop.r#type.as_str() {
            prop::PACKAGE => string_fields(&v, &["packageName", "version"]).map(|_| {
                let named = v.get("packageName").and_then(Value::as_str).unwrap_or("");
                if named != p {
                    out.push(err(
                        Rule::PackageProperty,
                        format!("package {p:?} does not match \"olm.package\" property {named:?}"),
                    ));
                }
                let ver = v.get("version").and_then(Value::as_str).unwrap_or("");
                if let Err(e) = blang::parse_version(ver) {
                    out.push(err(
                        Rule::PackageProperty,
                        format!("error parsing bundle {:?} version {ver:?}: {e}", b.name),
                    ));
                }
            }),
            prop::GVK | prop::GVK_REQUIRED => string_fields(&v, &["group", "kind", "version"]),
            prop::PACKAGE_REQUIRED => string_fields(&v, &["packageName", "versionRange"]),
            prop::BUNDLE_OBJECT => {
                has_objects = true;
                match v.get("data").and_then(Value::as_str) {
                    Some(d) => match base64::engine::general_purpose::STANDARD.decode(d) {
                        Err(e) => Err(format!("data is not base64: {e}")),
                        Ok(_) if crate::model::decode_bundle_object(&prop.value).is_none() => {
                            Err("read bundle objects: data is not a JSON or YAML document".into())
                        }
                        Ok(_) => Ok(()),
                    },
                    None => Err("expected an object with a string \"data\"".to_string()),
                }
            }
            prop::MAX_OCP => {
                max_ocp.push(v.clone());
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(e) = shape {
            out.push(err(
                Rule::Property,
                format!("parse property[{i}] of type {:?}: {e}", prop.r#type),
            ));
        }
    }
    if csv_metadata > 1 {
        out.push(err(
            Rule::Property,
            format!("at most one \"olm.csv.metadata\" property is allowed, found {csv_metadata}"),
        ));
    }
    if b.image.is_empty() && !has_objects {
        out.push(err(Rule::Image, "bundle image must be set".into()));
    }
    for msg in max_openshift_problems(&max_ocp) {
        out.push(
            Diagnostic::warning(Rule::MaxOpenShiftVersion, msg)
                .at(&b.origin)
                .package(p)
                .bundle(&b.name),
        );
    }
}

fn string_fields(v: &Value, fields: &[&str]) -> Result<(), String> {
    let Value::Object(m) = v else {
        return Err("expected an object".into());
    };
    for f in fields {
        match m.get(*f) {
            None | Some(Value::String(_)) => {}
            Some(other) => return Err(format!("field {f:?} must be a string, found {other}")),
        }
    }
    Ok(())
}

/// `olm.maxOpenShiftVersion` values OpenShift's operator would treat as incompatible.
pub fn max_openshift_problems(values: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    if values.len() > 1 {
        out.push(format!(
            "{} \"olm.maxOpenShiftVersion\" properties; OpenShift rejects more than one",
            values.len()
        ));
    }
    for v in values {
        match v {
            Value::Number(n) => out.push(format!(
                "olm.maxOpenShiftVersion is the number {n}, not a string; YAML may have turned 4.10 into 4.1, so quote the value"
            )),
            Value::String(s) => {
                let t = s.trim().trim_matches('"');
                if t.is_empty() {
                    out.push("olm.maxOpenShiftVersion is empty".to_string());
                } else {
                    match blang::parse_tolerant(t) {
                        Err(e) => out.push(format!("olm.maxOpenShiftVersion {s:?} is not a version: {e}")),
                        Ok(_) if t.split('.').count() != 2 => out.push(format!(
                            "olm.maxOpenShiftVersion {s:?} must be exactly major.minor (OpenShift rejects a patch version)"
                        )),
                        Ok(_) => {}
                    }
                }
            }
            other => out.push(format!("olm.maxOpenShiftVersion must be a string, found {other}")),
        }
    }
    out
}

fn validate_deprecations(pkg: &Package, out: &mut Vec<Diagnostic>) {
    let Some(d) = &pkg.deprecations else { return };
    let p = pkg.name.as_str();
    let err = |msg: String| {
        Diagnostic::error(Rule::Deprecation, msg)
            .at(&d.origin)
            .package(p)
    };
    let mut seen = BTreeSet::new();
    for (j, e) in d.entries.iter().enumerate() {
        if e.message.is_empty() {
            out.push(err(format!(
                "entry [{j}]: invalid deprecation: message must be set"
            )));
        }
        if !seen.insert((e.schema.as_str(), e.name.as_str())) {
            out.push(err(format!(
                "duplicate deprecation entry {{schema: {:?}, name: {:?}}} for package {p:?}",
                e.schema, e.name
            )));
        }
        match e.schema.as_str() {
            "" => out.push(err(format!(
                "schema must be set for deprecation entry [{j}] for package {p:?}"
            ))),
            schema::BUNDLE if !pkg.bundles.contains_key(&e.name) => out.push(err(format!(
                "cannot deprecate bundle {:?} for package {p:?}: bundle not found",
                e.name
            ))),
            schema::CHANNEL if !pkg.channels.contains_key(&e.name) => out.push(err(format!(
                "cannot deprecate channel {:?} for package {p:?}: channel not found",
                e.name
            ))),
            schema::PACKAGE if !e.name.is_empty() => out.push(err(format!(
                "package name must be empty for deprecated package {p:?} (specified {:?})",
                e.name
            ))),
            schema::BUNDLE | schema::CHANNEL | schema::PACKAGE => {}
            other => out.push(err(format!(
                "cannot deprecate object {other:?} {:?}: object schema unknown",
                e.name
            ))),
        }
    }
}
