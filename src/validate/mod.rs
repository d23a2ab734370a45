//! Validation of an assembled catalog: upstream's FBC model rules, reported all at once.
//!
//! Structural problems (duplicates, unknown packages) are found while assembling
//! ([`crate::catalog::build`]); this module checks everything the model can express: names,
//! default channels, channel heads, replaces cycles, stranded bundles, `olm.package`
//! properties and versions, skipRanges, images, deprecation references, and property shapes.
//! Graph questions are answered by [`crate::graph`]; nothing here re-derives an edge.
//! Messages reuse upstream's key words so that searching for them finds both tools.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the model rules, all reported at once |
//! | [`properties`] | typed property values, with Go's `encoding/json` wording |
//! | [`schemas`] | unknown schemas that look meant for OLM (misspelt, templates) |
//! | [`help`] | the `help:` line of each update-graph error |
//! | [`edge_lint`] | warnings about single update edges |
//! | [`upgrade_lint`] | graphs classic OLM and OLM v1 resolve differently; downgrade hops |

pub mod edge_lint;
mod help;
pub mod properties;
mod schemas;
pub mod upgrade_lint;

use crate::diag::{Diagnostic, Rule};
use crate::graph::{self, Head};
use crate::model::*;
use crate::release;
use crate::version::blang;
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
    for m in &cat.others {
        if let Err(e) = custom_meta_key(&m.schema, &m.package) {
            out.push(
                Diagnostic::error(Rule::CustomMeta, format!("invalid custom schema meta: {e}"))
                    .at(&m.origin),
            );
        }
    }
    schemas::unknown_schemas(cat, &mut out);
    out
}

/// Upstream's cache build keys custom metas by schema and package, each of which must match
/// `^[a-zA-Z0-9][a-zA-Z0-9._-]*$` (the package only when present).
fn custom_meta_key(schema: &str, package: &str) -> Result<(), String> {
    const PATTERN: &str = "^[a-zA-Z0-9][a-zA-Z0-9._-]*$";
    let ok = |v: &str| {
        v.bytes().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && v.bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
    };
    if schema.is_empty() {
        return Err("invalid schema: must not be empty".into());
    }
    if !ok(schema) {
        return Err(format!("invalid schema {schema:?}: must match {PATTERN}"));
    }
    if !package.is_empty() && !ok(package) {
        return Err(format!(
            "invalid packageName {package:?}: must match {PATTERN}"
        ));
    }
    Ok(())
}

pub use crate::names::{dns1123_label_errors, is_dns1123_label};

fn validate_package(pkg: &Package, out: &mut Vec<Diagnostic>) {
    let p = pkg.name.as_str();
    let err = |rule: Rule, msg: String| Diagnostic::error(rule, msg).at(&pkg.origin).package(p);
    let name_errors = dns1123_label_errors(p);
    if !name_errors.is_empty() {
        out.push(err(
            Rule::PackageName,
            format!("invalid package name {p:?}: [{}]", name_errors.join(" ")),
        ));
    }
    // Upstream decodes the icon when it reads an FBC package blob; its SQLite and manifest
    // paths keep a CSV's icon string as it is. FBC packages are the ones with a document number.
    if let Some(icon) = pkg.icon.as_ref().filter(|_| pkg.origin.doc.is_some()) {
        if let Some(at) = properties::go_base64_error(&icon.base64data) {
            out.push(err(
                Rule::Icon,
                format!("parse package: illegal base64 data at input byte {at}"),
            ));
        }
    }
    if pkg.channels.is_empty() {
        out.push(err(
            Rule::Empty,
            "package must contain at least one channel".into(),
        ));
    }
    if pkg.default_channel.is_empty() {
        out.push(
            err(Rule::DefaultChannel, "default channel must be set".into())
                .help(help::default_channel(pkg)),
        );
    } else if !pkg.channels.contains_key(&pkg.default_channel) {
        out.push(err(
            Rule::DefaultChannel,
            format!(
                "default channel {0:?} not found in channels list (opm adds an empty channel {0:?} for it and reports: invalid channel {0:?}: channel must contain at least one bundle)",
                pkg.default_channel
            ),
        ).help(help::default_channel(pkg)));
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
    let err = |rule: Rule, msg: String| Diagnostic::error(rule, msg).on_channel(p, ch);
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
                out.push(
                    err(
                        Rule::SkipRange,
                        format!(
                            "entry {:?}: invalid skipRange {:?}: {x}",
                            e.name, e.skip_range
                        ),
                    )
                    .bundle(&e.name),
                );
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
        Head::Many(heads) => out.push(
            err(
                Rule::ChannelHead,
                format!(
                    "multiple channel heads found in graph: {}",
                    heads.join(", ")
                ),
            )
            .help(help::heads(pkg, &heads)),
        ),
        Head::One(head) => {
            let walk = graph::replaces_walk(ch, head);
            if let Some(cyc) = walk.cycle {
                out.push(
                    err(
                        Rule::Cycle,
                        format!(
                            "detected cycle in replaces chain of upgrade graph: {}",
                            cyc.join(" -> ")
                        ),
                    )
                    .help(help::cycle(pkg, &cyc)),
                );
            } else if !walk.stranded.is_empty() {
                out.push(
                    err(
                        Rule::Stranded,
                        format!(
                            "channel contains one or more stranded bundles: {}",
                            walk.stranded.join(", ")
                        ),
                    )
                    .help(help::stranded(pkg, ch, head, &walk.stranded)),
                );
            }
        }
    }
}

/// The rules that read one bundle alone: its `olm.package` property, property shapes, image.
/// [`validate`] runs them on every bundle not already checked; a streaming ingest runs them as
/// each bundle is read, before it keeps only a light copy ([`bundle_rules_then_lighten`]).
pub fn bundle_rules(b: &Bundle, out: &mut Vec<Diagnostic>) {
    let p = b.package.as_str();
    let err = |rule: Rule, msg: String| Diagnostic::error(rule, msg).on_bundle(b);
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
        let ty = prop.r#type.as_str();
        csv_metadata += usize::from(ty == prop::CSV_METADATA);
        if ty == prop::BUNDLE_OBJECT {
            has_objects = true;
            // Upstream decodes bundle objects while reading the file, before anything else.
            if let Err(e) = bundle_object(i, &prop.value) {
                let msg = format!(
                    "read bundle objects: package {p:?}, bundle {:?}: {e}",
                    b.name
                );
                out.push(err(Rule::Property, msg));
                continue;
            }
        }
        if let Err(e) = properties::check(ty, &prop.value) {
            out.push(err(
                Rule::Property,
                format!("parse property[{i}] of type {ty:?}: {e}"),
            ));
            continue;
        }
        match ty {
            prop::PACKAGE => package_property(b, &prop.value, out),
            prop::MAX_OCP => max_ocp.push(serde_json::from_str(&prop.value).unwrap_or_default()),
            _ => {}
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
    let images = std::iter::once(("image".to_string(), b.image.as_str())).chain(
        b.related_images
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("relatedImages[{i}].image"), r.image.as_str())),
    );
    for (field, image) in images {
        if image.is_empty() {
            continue;
        }
        if let Err(e) = crate::imageref::check(image) {
            out.push(err(
                Rule::Image,
                format!(
                    "package {p:?} bundle {:?} {field}: invalid image pull spec {image:?}: {e}",
                    b.name
                ),
            ));
        }
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

/// Upstream's bundle-object decoding (`read bundle objects`): the value must hold base64
/// `data` that is a JSON or YAML document.
fn bundle_object(i: usize, value: &str) -> Result<(), String> {
    if let Err(e) = properties::check(prop::BUNDLE_OBJECT, value) {
        return Err(format!("parse property at index {i} as bundle object: {e}"));
    }
    let data = serde_json::from_str::<Value>(value)
        .ok()
        .and_then(|v| v.get("data").and_then(Value::as_str).map(str::to_string));
    if data.is_some_and(|d| !d.is_empty()) && crate::model::decode_bundle_object(value).is_none() {
        return Err(format!(
            "convert bundle object property at index {i} to JSON: error converting YAML to JSON: data is not a JSON or YAML document"
        ));
    }
    Ok(())
}

/// The `olm.package` property of a bundle (already known to decode): package name, version,
/// release, normalized name, build metadata.
fn package_property(b: &Bundle, value: &str, out: &mut Vec<Diagnostic>) {
    let p = b.package.as_str();
    let err = |rule: Rule, msg: String| Diagnostic::error(rule, msg).on_bundle(b);
    let v: Value = serde_json::from_str(value).unwrap_or_default();
    let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let named = field("packageName");
    if named != p {
        out.push(err(
            Rule::PackageProperty,
            format!("package {p:?} does not match \"olm.package\" property {named:?}"),
        ));
    }
    let ver = field("version");
    let version = match blang::parse_version(&ver) {
        Ok(v) => Some(v),
        Err(e) => {
            out.push(err(
                Rule::PackageProperty,
                format!("error parsing bundle {:?} version {ver:?}: {e}", b.name),
            ));
            None
        }
    };
    let rel = field("release");
    if rel.is_empty() {
        return;
    }
    if let Err(e) = release::check(&rel) {
        out.push(err(
            Rule::Release,
            format!(
                "error parsing bundle {:?} release version {rel:?}: {e}",
                b.name
            ),
        ));
        return;
    }
    let Some(version) = version else { return };
    let normalized = release::normalized_name(p, &version, &rel);
    if b.name != normalized {
        out.push(err(
            Rule::Release,
            format!(
                "name {:?} does not match normalized name {normalized:?}",
                b.name
            ),
        ));
    }
    if !version.build.is_empty() {
        out.push(err(
            Rule::Release,
            "cannot use build metadata in version with a release version".into(),
        ));
    }
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
                "duplicate deprecation entry {} for package {p:?}",
                go_reference(&e.schema, &e.name)
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
            _ => out.push(err(format!(
                "cannot deprecate object {} referenced by entry {j} for package {p:?}: object schema unknown",
                go_reference(&e.schema, &e.name)
            ))),
        }
    }
}

/// A deprecation reference the way upstream prints it (Go's `%#v` of the struct).
fn go_reference(schema: &str, name: &str) -> String {
    format!("declcfg.PackageScopedReference{{Schema:{schema:?}, Name:{name:?}}}")
}
