//! The substitutes template (`schema: olm.template.substitutes`): a valid FBC (`entries`) and
//! a list of `substitutions`, each naming a bundle reference (`name`) that takes the place of
//! an existing bundle (`base`) in the update graph.
//!
//! For each substitution, in order: the reference is rendered and its first bundle must have
//! a higher version (then release) than the base. In every channel, each entry of the base
//! gets a twin for the substitute, which takes over the base entry's replaces, skips and
//! skipRange and also skips the base; the base entry keeps none of them. Every other entry
//! of the channel that replaced the base now replaces the substitute (and skips the base);
//! one that skipped the base skips the substitute instead. The substitute bundle joins the
//! catalog, and the result must still be a valid catalog.

use super::{field, BundleRenderer, Error};
use crate::catalog::Decl;
use crate::model::{Bundle, Catalog};
use crate::text::go_quote;
use serde_json::Value;
use std::cmp::Ordering;

/// The schema a substitutes template declares.
pub const SCHEMA: &str = "olm.template.substitutes";

/// One substitution: the bundle reference `name` supersedes the bundle named `base`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Substitute {
    pub name: String,
    pub base: String,
}

/// Renders a substitutes template document.
pub fn render(
    doc: &Value,
    file: &str,
    renderer: &mut BundleRenderer<'_>,
) -> Result<Catalog, Error> {
    let (entries, substitutions) =
        parse(doc).map_err(|e| Error::from(format!("render: unable to parse template: {e}")))?;
    let mut cat = entries_catalog(entries, file).map_err(|e| {
        Error::from(format!(
            "render: unable to create declarative config from entries: {e}"
        ))
    })?;
    valid(&cat).map_err(|e| Error::from(format!("render: entries are not valid FBC: {e}")))?;
    let mut bases = std::collections::BTreeSet::new();
    let mut names = std::collections::BTreeMap::new();
    for s in &substitutions {
        if !bases.insert(s.base.as_str()) {
            return Err(Error::from(format!(
                "render: cannot reuse the same substitution base {}",
                go_quote(&s.base)
            )));
        }
        if let Some(other) = names.insert(s.name.as_str(), s.base.as_str()) {
            return Err(Error::from(format!(
                "render: cannot reuse the same substitution {} for different bases ({} and {})",
                go_quote(&s.name),
                go_quote(other),
                go_quote(&s.base)
            )));
        }
        substitute(&mut cat, s, renderer).map_err(|e| {
            format!(
                "render: error processing substitution {} -> {}: {e}",
                go_quote(&s.base),
                go_quote(&s.name)
            )
        })?;
    }
    Ok(cat)
}

/// The template's entries (FBC objects) and substitutions. Keys match as Go's
/// `encoding/json` matches them (any case).
pub fn parse(doc: &Value) -> Result<(Vec<Value>, Vec<Substitute>), Error> {
    let m = doc.as_object().ok_or("the template is not a mapping")?;
    let unmarshal = |what: &str| Error::from(format!("unmarshalling template: {what}"));
    let string = |v: Option<&Value>, what: &str| match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(unmarshal(&format!("{what} is not a string"))),
    };
    let list = |key: &str| match field(m, key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => Ok(a.clone()),
        Some(_) => Err(unmarshal(&format!("{key} is not a list"))),
    };
    let declared = string(field(m, "schema"), "schema")?;
    let entries = list("entries")?;
    let mut substitutions = Vec::new();
    for (i, s) in list("substitutions")?.iter().enumerate() {
        let o = match s {
            Value::Object(o) => o,
            Value::Null => {
                substitutions.push(Substitute {
                    name: String::new(),
                    base: String::new(),
                });
                continue;
            }
            _ => return Err(unmarshal(&format!("substitutions[{i}] is not a mapping"))),
        };
        substitutions.push(Substitute {
            name: string(field(o, "name"), &format!("substitutions[{i}].name"))?,
            base: string(field(o, "base"), &format!("substitutions[{i}].base"))?,
        });
    }
    if declared != SCHEMA {
        return Err(Error::from(format!(
            "template has unknown schema ({}), should be {}",
            go_quote(&declared),
            go_quote(SCHEMA)
        )));
    }
    Ok((entries, substitutions))
}

/// The entries as a catalog, typed by the same decoder as a catalog file.
fn entries_catalog(entries: Vec<Value>, file: &str) -> Result<Catalog, Error> {
    let mut diags = Vec::new();
    let mut decls: Vec<Decl> = Vec::new();
    for (i, e) in entries.into_iter().enumerate() {
        if !e.is_object() {
            return Err(Error::from(format!("entries[{i}] is not a mapping")));
        }
        super::decode_entry(&e, file, &mut decls, &mut diags)?;
    }
    super::build_catalog(decls, diags)
}

/// The catalog passes upstream's rules (what opm's conversion to its model checks).
fn valid(cat: &Catalog) -> Result<(), Error> {
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    match crate::validate::check(cat.clone(), &mut errors, &mut warnings) {
        Ok(_) => Ok(()),
        Err(_) => Err(errors
            .iter()
            .map(|d| crate::text::one_line(&d.message))
            .collect::<Vec<_>>()
            .join("; ")
            .into()),
    }
}

/// A bundle's version and release, compared as upstream compares them.
fn version_release(b: &Bundle, what: &str, named: &str) -> Result<VersionRelease, Error> {
    let v = b.version();
    let version = semver::Version::parse(&v).map_err(|e| {
        format!(
            "failed to get VersionRelease for {what} bundle {}: {e}",
            go_quote(named)
        )
    })?;
    let mut vr = VersionRelease {
        version,
        release: b.release(),
    };
    // A bundle of the legacy release scheme (its CSV names what it substitutes for) carries
    // its release as the version's build metadata: that becomes the release.
    if vr.release.is_none() && !vr.version.build.is_empty() && uses_legacy_release(b) {
        vr.release = Some(vr.version.build.to_string());
        vr.version.build = semver::BuildMetadata::EMPTY;
    }
    Ok(vr)
}

/// Whether the bundle's CSV (its `olm.csv.metadata`, or a CSV among its `olm.bundle.object`s)
/// has a non-empty `olm.substitutesFor` annotation, as upstream checks before reading a
/// release from build metadata.
fn uses_legacy_release(b: &Bundle) -> bool {
    const KEY: &str = "olm.substitutesFor";
    let named = |annotations: &Value| annotations[KEY].as_str().is_some_and(|s| !s.is_empty());
    b.properties.iter().any(|p| match p.r#type.as_str() {
        crate::model::prop::CSV_METADATA => {
            serde_json::from_str::<Value>(&p.value).is_ok_and(|v| named(&v["annotations"]))
        }
        crate::model::prop::BUNDLE_OBJECT => {
            use base64::Engine;
            serde_json::from_str::<Value>(&p.value)
                .ok()
                .and_then(|v| v["data"].as_str().map(str::to_string))
                .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok())
                .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                .is_some_and(|o| {
                    o["kind"] == "ClusterServiceVersion" && named(&o["metadata"]["annotations"])
                })
        }
        _ => false,
    })
}

struct VersionRelease {
    version: semver::Version,
    release: Option<String>,
}

impl VersionRelease {
    fn cmp(&self, o: &VersionRelease) -> Ordering {
        self.version
            .cmp_precedence(&o.version)
            .then_with(|| crate::release::compare(self.release.as_deref(), o.release.as_deref()))
    }
}

/// Applies one substitution to `cat` (see the module documentation).
fn substitute(
    cat: &mut Catalog,
    s: &Substitute,
    renderer: &mut BundleRenderer<'_>,
) -> Result<(), Error> {
    if s.name.is_empty() {
        return Err("substitution name cannot be empty".into());
    }
    if s.base.is_empty() {
        return Err("substitution base cannot be empty".into());
    }
    if s.name == s.base {
        return Err("substitution name and base cannot be the same".into());
    }
    let rendered = renderer(&s.name).map_err(|e| {
        format!(
            "failed to render bundle image reference {}: {e}",
            go_quote(&s.name)
        )
    })?;
    let Some(sub) = rendered.into_iter().next() else {
        return Err(Error::from(format!(
            "rendered bundle image reference {} contains no bundles",
            go_quote(&s.name)
        )));
    };
    let sub_vr = version_release(&sub, "substitute", &s.name)?;
    let Some(base) = cat.packages.values().find_map(|p| p.bundles.get(&s.base)) else {
        return Err(Error::from(format!(
            "base bundle {} does not exist in catalog",
            go_quote(&s.base)
        )));
    };
    let base_vr = version_release(base, "base", &s.base)?;
    if base_vr.cmp(&sub_vr) != Ordering::Less {
        return Err(Error::from(format!(
            "base bundle {} is not less than substitute bundle {}",
            go_quote(&s.base),
            go_quote(&s.name)
        )));
    }
    for ch in cat
        .packages
        .values_mut()
        .flat_map(|p| p.channels.values_mut())
    {
        let original = ch.entries.len();
        let at: Vec<usize> = (0..original)
            .filter(|&j| ch.entries[j].name == s.base)
            .collect();
        for &j in at.iter().rev() {
            let base_entry = &mut ch.entries[j];
            let mut twin = crate::model::ChannelEntry {
                name: sub.name.clone(),
                replaces: std::mem::take(&mut base_entry.replaces),
                skips: std::mem::take(&mut base_entry.skips),
                skip_range: std::mem::take(&mut base_entry.skip_range),
            };
            twin.skips.push(s.base.clone());
            ch.entries.push(twin);
        }
        for e in &mut ch.entries[..original] {
            if e.replaces == s.base {
                e.replaces = sub.name.clone();
                e.skips.push(s.base.clone());
            } else if e.skips.contains(&s.base) {
                e.skips.push(sub.name.clone());
                e.skips.retain(|k| k != &s.base);
            }
        }
    }
    let invalid = |e: String| Error::from(format!("resulting config is not valid FBC: {e}"));
    let Some(pkg) = cat.packages.get_mut(&sub.package) else {
        return Err(invalid(format!(
            "unknown package {} for bundle {}",
            go_quote(&sub.package),
            go_quote(&sub.name)
        )));
    };
    if pkg.bundles.contains_key(&sub.name) {
        return Err(invalid(format!(
            "package {} has duplicate bundle {}",
            go_quote(&sub.package),
            go_quote(&sub.name)
        )));
    }
    pkg.bundles.insert(sub.name.clone(), sub);
    valid(cat).map_err(|e| invalid(e.to_string()))
}

#[cfg(test)]
#[path = "substitutes_tests.rs"]
mod tests;
