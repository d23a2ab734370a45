//! The semver template (`schema: olm.semver`): bundles listed under Candidate, Fast and
//! Stable become channels named by archetype and version (`stable-v1` for major channels,
//! `fast-v1.2` for minor ones), linked as upstream links them: within a major version (and
//! archetype, and channel kind) the last bundle of each minor version replaces the last of
//! the previous minor version and skips every other bundle before it; nothing links across
//! a major version. The default channel is the "most stable" one: highest archetype, then
//! highest first version, then the preferred channel kind.

use super::{field, BundleRenderer, Error};
use crate::model::{prop, Bundle, Catalog, Channel, ChannelEntry, Package};
use crate::text::go_quote;
use semver::Version;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The schema a semver template declares.
pub const SCHEMA: &str = "olm.semver";

/// A channel archetype, least stable first (the order is the priority).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Archetype {
    Candidate,
    Fast,
    Stable,
}

impl Archetype {
    pub const ALL: [Archetype; 3] = [Archetype::Candidate, Archetype::Fast, Archetype::Stable];
    pub fn name(self) -> &'static str {
        match self {
            Archetype::Candidate => "candidate",
            Archetype::Fast => "fast",
            Archetype::Stable => "stable",
        }
    }
}

/// A kind of generated channel; unset ranks lowest, minor highest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stream {
    Unset,
    Major,
    Minor,
}

/// A parsed semver template.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    pub generate_major: bool,
    pub generate_minor: bool,
    /// The preferred kind of default channel (after upstream's defaulting).
    pub preference: Stream,
    /// The bundle references of each archetype, as listed.
    pub bundles: BTreeMap<Archetype, Vec<String>>,
}

/// Bundle name → version, for each archetype.
pub type Versions = BTreeMap<Archetype, BTreeMap<String, Version>>;

/// Parses a semver template document: keys as Go's `encoding/json` matches them (any case),
/// unknown keys rejected; with neither generate option, minor channels; the preference
/// defaults to the generated kind and must name a generated kind.
pub fn parse(doc: &Value) -> Result<Template, Error> {
    let m = doc.as_object().ok_or("the template is not a mapping")?;
    const KEYS: [&str; 7] = [
        "schema",
        "generateMajorChannels",
        "generateMinorChannels",
        "defaultChannelTypePreference",
        "candidate",
        "fast",
        "stable",
    ];
    // The schema first: another kind's template is named by its schema (upstream's words),
    // not by the first of its fields this kind does not know.
    let declared = field(m, "schema").and_then(Value::as_str).unwrap_or("");
    if declared != SCHEMA {
        return Err(Error::from(format!(
            "input file has unknown schema {}, should be {}",
            go_quote(declared),
            go_quote(SCHEMA)
        )));
    }
    known_keys(m, &KEYS)?;
    let flag = |k: &str| match field(m, k) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(Error::from(format!("{k} must be true or false, not {v}"))),
    };
    let (major, mut minor) = (
        flag("generateMajorChannels")?,
        flag("generateMinorChannels")?,
    );
    if !major && !minor {
        minor = true;
    }
    let pref = match field(m, "defaultChannelTypePreference") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(v) => {
            return Err(Error::from(format!(
                "unknown DefaultChannelTypePreference: {v}; valid values are 'major' or 'minor'"
            )))
        }
    };
    let preference = match pref {
        "" if minor => Stream::Minor,
        "" => Stream::Major,
        "minor" if minor => Stream::Minor,
        "major" if major => Stream::Major,
        "minor" | "major" => {
            return Err(Error::from(format!("schema attribute mismatch: DefaultChannelTypePreference set to '{pref}' doesn't make sense if not generating {pref}-version channels")))
        }
        other => {
            return Err(Error::from(format!(
                "unknown DefaultChannelTypePreference: {}; valid values are 'major' or 'minor'",
                go_quote(other)
            )))
        }
    };
    let mut bundles = BTreeMap::new();
    for arch in Archetype::ALL {
        bundles.insert(arch, bundle_list(m, arch)?);
    }
    Ok(Template {
        generate_major: major,
        generate_minor: minor,
        preference,
        bundles,
    })
}

fn known_keys(m: &Map<String, Value>, keys: &[&str]) -> Result<(), Error> {
    match m
        .keys()
        .find(|k| !keys.iter().any(|f| f.eq_ignore_ascii_case(k)))
    {
        Some(k) => Err(Error::from(format!("unknown field {}", go_quote(k)))),
        None => Ok(()),
    }
}

fn bundle_list(m: &Map<String, Value>, arch: Archetype) -> Result<Vec<String>, Error> {
    let list = match field(m, arch.name()) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(o)) => {
            known_keys(o, &["bundles"])?;
            match field(o, "bundles") {
                None | Some(Value::Null) => return Ok(Vec::new()),
                Some(Value::Array(a)) => a,
                Some(_) => {
                    return Err(Error::from(format!(
                        "{}.bundles is not a list",
                        arch.name()
                    )))
                }
            }
        }
        Some(_) => return Err(Error::from(format!("{} is not a mapping", arch.name()))),
    };
    let mut out = Vec::new();
    for (i, b) in list.iter().enumerate() {
        let o = b
            .as_object()
            .ok_or_else(|| Error::from(format!("{}.bundles[{i}] is not a mapping", arch.name())))?;
        known_keys(o, &["image"])?;
        out.push(
            field(o, "image")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        );
    }
    Ok(out)
}

/// Renders a semver template document, rendering each distinct bundle reference once.
pub fn render(doc: &Value, renderer: &mut BundleRenderer<'_>) -> Result<Catalog, Error> {
    let t = parse(doc)?;
    let mut rendered: BTreeMap<&str, Bundle> = BTreeMap::new();
    let mut order = Vec::new();
    for r in t.bundles.values().flatten() {
        if rendered.contains_key(r.as_str()) {
            continue;
        }
        let mut got = renderer(r)?;
        if got.len() != 1 {
            return Err(Error::from(format!(
                "bundle reference {} resulted in {} bundles, expected 1",
                go_quote(r),
                got.len()
            )));
        }
        rendered.insert(r, got.remove(0));
        order.push(r.as_str());
    }
    if rendered.is_empty() {
        return Err("no bundles specified or no bundles could be rendered".into());
    }
    let (package, versions) = versions(&t, &rendered)?;
    let (channels, default_channel) = generate_channels(&versions, &t);
    let mut pkg = Package {
        name: package.clone(),
        default_channel: default_channel.clone(),
        ..Default::default()
    };
    // The package's icon and description come from the default channel's head, if its CSV
    // is among its objects.
    let head = channels
        .iter()
        .find(|c| c.name == default_channel)
        .and_then(|c| c.entries.last());
    if let Some(csv) = head.and_then(|h| {
        rendered
            .values()
            .find(|b| b.name == h.name)
            .and_then(csv_of)
    }) {
        let from = crate::catalog::csv::package(
            &package,
            &default_channel,
            Some(&csv),
            Default::default(),
        );
        pkg.icon = from.icon;
        pkg.description = from.description;
    }
    pkg.channels = channels.into_iter().map(|c| (c.name.clone(), c)).collect();
    for r in order {
        let b = rendered[r].clone();
        pkg.bundles.insert(b.name.clone(), b);
    }
    let mut cat = Catalog::default();
    cat.packages.insert(package, pkg);
    Ok(cat)
}

/// The CSV among a bundle's `olm.bundle.object`s.
fn csv_of(b: &Bundle) -> Option<Value> {
    b.properties_of(prop::BUNDLE_OBJECT)
        .filter_map(|p| crate::model::decode_bundle_object(&p.value))
        .find(|(kind, _)| kind == "ClusterServiceVersion")
        .and_then(|(_, json)| serde_json::from_str(&json).ok())
}

/// The package and each archetype's bundle versions, checked as upstream checks them: one
/// `olm.package` property per bundle, a strict semver version, one package throughout, no
/// bundle twice in one archetype, no two versions differing only in build metadata.
pub fn versions(
    t: &Template,
    rendered: &BTreeMap<&str, Bundle>,
) -> Result<(String, Versions), Error> {
    let mut package: Option<String> = None;
    let mut out = Versions::new();
    for (arch, refs) in &t.bundles {
        let mut entries = BTreeMap::new();
        for r in refs {
            let b = rendered.get(r.as_str()).ok_or_else(|| {
                format!(
                    "supplied bundle image name {} not found in rendered bundle images",
                    go_quote(r)
                )
            })?;
            let pkgs: Vec<Value> = b
                .properties_of(prop::PACKAGE)
                .filter_map(|p| serde_json::from_str(&p.value).ok())
                .collect();
            if pkgs.len() != 1 {
                return Err(Error::from(format!(
                    "bundle {} has {} {} properties, expected exactly 1",
                    go_quote(&b.name),
                    pkgs.len(),
                    go_quote(prop::PACKAGE)
                )));
            }
            let s = |k: &str| {
                pkgs[0]
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let (name, version) = (s("packageName"), s("version"));
            let v = crate::version::blang::parse_version(&version).map_err(|e| {
                format!(
                    "bundle {} has invalid version {}: {e}",
                    go_quote(&b.name),
                    go_quote(&version)
                )
            })?;
            match &package {
                Some(p) if *p != name => {
                    return Err(Error::from(format!(
                        "bundle {} does not belong to this package: {}",
                        go_quote(&name),
                        go_quote(p)
                    )))
                }
                Some(_) => {}
                None => package = Some(name),
            }
            if entries.insert(b.name.clone(), v).is_some() {
                return Err(Error::from(format!(
                    "duplicate bundle name {} in {}",
                    go_quote(&b.name),
                    arch.name()
                )));
            }
        }
        build_metadata_conflicts(&entries)?;
        out.insert(*arch, entries);
    }
    Ok((package.unwrap_or_default(), out))
}

/// Versions that differ only in build metadata cannot be ordered: an error naming each.
pub fn build_metadata_conflicts(versions: &BTreeMap<String, Version>) -> Result<(), Error> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut errs = Vec::new();
    for v in versions.values() {
        let mut stripped = v.clone();
        stripped.build = semver::BuildMetadata::EMPTY;
        let stripped = stripped.to_string();
        if !seen.insert(stripped.clone()) {
            errs.push(format!(
                "bundle version {} cannot be compared to {}",
                go_quote(&v.to_string()),
                go_quote(&stripped)
            ));
        }
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(Error::from(format!("encountered bundle versions which differ only by build metadata, which cannot be ordered: {}", errs[0]))),
        _ => Err(Error::from(format!("encountered bundle versions which differ only by build metadata, which cannot be ordered: [{}]", errs.join(", ")))),
    }
}

/// One channel entry while channels are linked.
#[derive(Clone, Debug)]
pub struct EntryTuple {
    pub arch: Archetype,
    pub kind: Stream,
    /// The channel it is in.
    pub parent: String,
    pub name: String,
    pub version: Version,
    /// Its index among the parent's entries.
    pub index: usize,
}

/// The channels of each archetype's bundles, linked, sorted by name, with the default
/// channel's name.
pub fn generate_channels(versions: &Versions, t: &Template) -> (Vec<Channel>, String) {
    struct High {
        arch: Archetype,
        kind: Stream,
        version: Version,
        name: String,
    }
    let gt = |h: &High, other: &High| {
        if h.arch != other.arch {
            return h.arch > other.arch;
        }
        if h.version.cmp_precedence(&other.version).is_ne() {
            return h.version.cmp_precedence(&other.version).is_gt();
        }
        if h.kind != other.kind {
            if h.kind == t.preference {
                return true;
            }
            if other.kind == t.preference {
                return false;
            }
            return h.kind > other.kind;
        }
        false
    };
    let mut high = High {
        arch: Archetype::Candidate,
        kind: Stream::Unset,
        version: Version::new(0, 0, 0),
        name: String::new(),
    };
    let mut channels: BTreeMap<String, Channel> = BTreeMap::new();
    let mut tuples = Vec::new();
    for arch in Archetype::ALL {
        let Some(bundles) = versions.get(&arch).filter(|b| !b.is_empty()) else {
            continue;
        };
        let mut names: Vec<&String> = bundles.keys().collect();
        names.sort_by(|a, b| bundles[*a].cmp_precedence(&bundles[*b]));
        for name in names {
            let v = &bundles[name];
            let mut kinds = Vec::new();
            if t.generate_major {
                kinds.push((Stream::Major, format!("{}-v{}", arch.name(), v.major)));
            }
            if t.generate_minor {
                kinds.push((
                    Stream::Minor,
                    format!("{}-v{}.{}", arch.name(), v.major, v.minor),
                ));
            }
            for (kind, cname) in kinds {
                let ch = channels.entry(cname.clone()).or_insert_with(|| {
                    let candidate = High {
                        arch,
                        kind,
                        version: v.clone(),
                        name: cname.clone(),
                    };
                    if gt(&candidate, &high) {
                        high = candidate;
                    }
                    Channel {
                        name: cname.clone(),
                        ..Default::default()
                    }
                });
                ch.entries.push(ChannelEntry {
                    name: name.clone(),
                    ..Default::default()
                });
                tuples.push(EntryTuple {
                    arch,
                    kind,
                    parent: cname,
                    name: name.clone(),
                    version: v.clone(),
                    index: ch.entries.len() - 1,
                });
            }
        }
    }
    (link_channels(channels, tuples), high.name)
}

/// Writes each channel's replaces and skips (see the module documentation) and returns the
/// channels sorted by name.
pub fn link_channels(
    mut channels: BTreeMap<String, Channel>,
    mut entries: Vec<EntryTuple>,
) -> Vec<Channel> {
    entries.sort_by(|a, b| {
        a.arch
            .cmp(&b.arch)
            .then(a.kind.cmp(&b.kind))
            .then_with(|| a.version.cmp_precedence(&b.version))
    });
    let minor_of = |v: &Version| (v.major, v.minor);
    let mut prev_zmax = String::new();
    let mut skips: BTreeSet<String> = BTreeSet::new();
    let finish = |channels: &mut BTreeMap<String, Channel>,
                  e: &EntryTuple,
                  replaces: &str,
                  skips: &BTreeSet<String>| {
        if let Some(entry) = channels
            .get_mut(&e.parent)
            .and_then(|c| c.entries.get_mut(e.index))
        {
            entry.replaces = replaces.to_string();
            let s: Vec<String> = skips.iter().filter(|s| *s != replaces).cloned().collect();
            if !s.is_empty() {
                entry.skips = s;
            }
        }
    };
    for i in 1..entries.len() {
        let (prev, cur) = (&entries[i - 1], &entries[i]);
        let arch_change = cur.arch != prev.arch;
        let kind_change = cur.kind != prev.kind;
        let x_change = cur.version.major != prev.version.major;
        let y_change = minor_of(&cur.version) != minor_of(&prev.version);
        if arch_change || kind_change || x_change || y_change {
            finish(&mut channels, prev, &prev_zmax, &skips);
        }
        if arch_change || kind_change || x_change {
            skips.clear();
            prev_zmax.clear();
        } else {
            if y_change {
                prev_zmax = prev.name.clone();
            }
            skips.insert(prev.name.clone());
        }
    }
    if entries.len() > 1 {
        let (pen, last) = (&entries[entries.len() - 2], &entries[entries.len() - 1]);
        if pen.arch == last.arch && pen.kind == last.kind && pen.version.major == last.version.major
        {
            finish(&mut channels, last, &prev_zmax, &skips);
        }
    }
    channels.into_values().collect()
}
