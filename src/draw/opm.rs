//! opm's channel layout: the graph `opm alpha render-template -o mermaid` draws (upstream's
//! channel writer with its default options, no minimum edge and no package filter), laid out
//! as opm lays it out so that the text `write::opm_mermaid` makes is opm's, byte for byte.
//!
//! How it differs from `opreg graph`'s layout: the whole catalog, one subgraph per package and
//! inside it one per channel; node ids are the package, channel and bundle names joined by
//! `-`; every channel entry is a node, written again at each end of every edge; a skipRange
//! is drawn as one edge from each entry of the channel whose version it covers. The marks are
//! opm's: an entry deprecated by name (in any package), a channel deprecated by name, the
//! package deprecated last in channel order, a bundle already skipped by a newer entry of the
//! channel, and the edges leading to such a bundle, or skipping it a second time.
//!
//! Order, as opm's: channels by name (the same name in several packages: by package name);
//! entries from the newest version down (ties as listed); a bundle's version is that of the
//! first bundle of that name, by package name, and a name that is no bundle is version 0.0.0.

use super::{DrawError, Note};
use crate::model::{prop, schema, Catalog, ChannelEntry};
use crate::text::go_quote;
use crate::version::blang;
use semver::Version;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A node: its id and the name it shows.
pub(super) struct OpmNode {
    pub id: String,
    pub name: String,
}

/// One line inside a channel's subgraph.
pub(super) enum OpmLine {
    Node(OpmNode),
    /// An edge from the bundle that can be replaced to the entry that replaces it; `label` is
    /// written as it is (opm quotes only a skipRange's).
    Edge {
        from: OpmNode,
        label: String,
        to: OpmNode,
    },
}

pub(super) struct OpmChannel {
    pub id: String,
    pub name: String,
    pub lines: Vec<OpmLine>,
}

/// The laid-out graph.
pub(super) struct OpmGraph {
    /// Package name → its channels, in opm's channel order.
    pub packages: BTreeMap<String, Vec<OpmChannel>>,
    /// The last deprecated package in channel order.
    pub deprecated_package: Option<String>,
    /// Ids of the channels deprecated by name, in channel order.
    pub deprecated_channels: Vec<String>,
    /// Class name → the ids of the entry nodes it marks, sorted.
    pub classes: BTreeMap<&'static str, Vec<String>>,
    /// Numbers of the edges drawn as leading to a skipped bundle, in edge order.
    pub skipped_links: Vec<usize>,
}

/// The node classes opm declares, in the order it declares them, with their styles.
pub(super) const CLASSES: [(&str, &str); 3] = [
    ("deprecated", "fill:#E8960F"),
    ("skipped", "stroke:#FF0000,stroke-width:4px"),
    (
        "deprecatedskipped",
        "fill:#E8960F,stroke:#FF0000,stroke-width:4px",
    ),
];

/// The version of every bundle of the catalog, by name, as opm reads it: exactly one
/// `olm.package` property, whose version is strict semver.
fn bundle_versions(cat: &Catalog) -> Result<HashMap<&str, Version>, DrawError> {
    let mut out = HashMap::new();
    for b in cat.packages.values().flat_map(|p| p.bundles.values()) {
        if out.contains_key(b.name.as_str()) {
            continue;
        }
        if b.properties_of(prop::PACKAGE).count() != 1 {
            return Err(DrawError::from(format!(
                "bundle {} has multiple {} properties, expected exactly 1",
                go_quote(&b.name),
                go_quote(prop::PACKAGE)
            )));
        }
        let raw = b.version();
        let v = blang::parse_version(&raw).map_err(|e| {
            format!(
                "bundle {} has invalid version {}: {e}",
                go_quote(&b.name),
                go_quote(&raw)
            )
        })?;
        out.insert(b.name.as_str(), v);
    }
    Ok(out)
}

/// Lays the catalog out as opm does; an unreadable skipRange is left out with a warning.
pub(super) fn layout(cat: &Catalog, notes: &mut Vec<Note>) -> Result<OpmGraph, DrawError> {
    let versions = bundle_versions(cat)?;
    let zero = Version::new(0, 0, 0);
    let version = |name: &str| versions.get(name).unwrap_or(&zero);

    let (mut dep_packages, mut dep_channels, mut dep_bundles) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for p in cat.packages.values() {
        for e in p.deprecations.iter().flat_map(|d| &d.entries) {
            match e.schema.as_str() {
                schema::PACKAGE => dep_packages.insert(p.name.as_str()),
                schema::CHANNEL => dep_channels.insert(e.name.as_str()),
                schema::BUNDLE => dep_bundles.insert(e.name.as_str()),
                _ => false,
            };
        }
    }

    let mut channels: Vec<_> = cat
        .packages
        .values()
        .flat_map(|p| p.channels.values().map(move |c| (p.name.as_str(), c)))
        .collect();
    channels.sort_by(|a, b| a.1.name.cmp(&b.1.name));

    let mut g = OpmGraph {
        packages: BTreeMap::new(),
        deprecated_package: None,
        deprecated_channels: Vec::new(),
        classes: CLASSES.iter().map(|(c, _)| (*c, Vec::new())).collect(),
        skipped_links: Vec::new(),
    };
    let mut link = 0usize;
    for (package, ch) in channels {
        let channel_id = format!("{package}-{}", ch.name);
        let node = |name: &str| OpmNode {
            id: format!("{channel_id}-{name}"),
            name: name.to_string(),
        };
        if dep_packages.contains(package) {
            g.deprecated_package = Some(package.to_string());
        }
        if dep_channels.contains(ch.name.as_str()) {
            g.deprecated_channels.push(channel_id.clone());
        }
        let mut entries: Vec<&ChannelEntry> = ch.entries.iter().collect();
        entries.sort_by(|a, b| version(&b.name).cmp_precedence(version(&a.name)));
        // Bundles a newer entry of this channel skips.
        let mut skipped: BTreeSet<&str> = BTreeSet::new();
        let mut lines = Vec::new();
        for e in entries {
            let to = || node(&e.name);
            let class = match (
                dep_bundles.contains(e.name.as_str()),
                skipped.contains(e.name.as_str()),
            ) {
                (true, true) => Some("deprecatedskipped"),
                (true, false) => Some("deprecated"),
                (false, true) => Some("skipped"),
                (false, false) => None,
            };
            if let Some(c) = class {
                g.classes.entry(c).or_default().push(to().id);
            }
            lines.push(OpmLine::Node(to()));
            for s in &e.skips {
                lines.push(OpmLine::Edge {
                    from: node(s),
                    label: "skip".into(),
                    to: to(),
                });
                if !skipped.insert(s.as_str()) {
                    g.skipped_links.push(link);
                }
                link += 1;
            }
            // An edge into a bundle already skipped leads nowhere new.
            let into_skipped = skipped.contains(e.name.as_str());
            if !e.skip_range.is_empty() {
                match blang::Range::parse(&e.skip_range) {
                    Ok(range) => {
                        for covered in ch
                            .entries
                            .iter()
                            .filter(|c| range.matches(version(&c.name)))
                        {
                            lines.push(OpmLine::Edge {
                                from: node(&covered.name),
                                label: format!("\"skipRange({})\"", e.skip_range),
                                to: to(),
                            });
                            if into_skipped {
                                g.skipped_links.push(link);
                            }
                            link += 1;
                        }
                    }
                    Err(err) => notes.push(Note::Warning(format!(
                        "ignoring invalid SkipRange for package/edge {}/{}: {err}",
                        go_quote(package),
                        go_quote(&e.name)
                    ))),
                }
            }
            if !e.replaces.is_empty() {
                lines.push(OpmLine::Edge {
                    from: node(&e.replaces),
                    label: "replace".into(),
                    to: to(),
                });
                if into_skipped {
                    g.skipped_links.push(link);
                }
                link += 1;
            }
        }
        g.packages
            .entry(package.to_string())
            .or_default()
            .push(OpmChannel {
                id: channel_id.clone(),
                name: ch.name.clone(),
                lines,
            });
    }
    g.classes.values_mut().for_each(|ids| ids.sort());
    Ok(g)
}

#[cfg(test)]
#[path = "opm_tests.rs"]
mod tests;
