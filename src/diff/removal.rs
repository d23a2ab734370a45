//! The removal gate of `opreg diff --fail-on-removal`: every channel and channel entry of OLD
//! that NEW no longer has, each marked allowed when its channel matches the allow pattern
//! (unanchored, as pipelines that gate catalog fragments match it). A package missing from NEW
//! removes each of its channels, unless NEW is a fragment ([`fragment_of`]): then only the
//! packages NEW has are compared.

use crate::model::Catalog;
use serde::Serialize;

/// The channels whose removals pass by default: pre-release channels.
pub const DEFAULT_ALLOW: &str = ".*(dev-preview|pre-ga|candidate).*";

/// What went away.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Removed {
    /// The whole package is gone from NEW: one removal per channel it had.
    Package,
    /// The channel is gone from its package in NEW.
    Channel,
    /// The bundle is no longer an entry of a channel NEW still has.
    Entry,
}

/// One channel or channel entry of OLD that NEW does not have.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Removal {
    pub package: String,
    pub channel: String,
    /// The entry's bundle name; empty when a whole channel (or package) went.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub bundle: String,
    pub removed: Removed,
    /// The channel matches the allow pattern, so this removal does not fail the gate.
    pub allowed: bool,
}

/// An allowed removal took away `s`'s channel, or its entry in that channel.
pub fn allowed_removal_covers(removals: &[Removal], s: &super::Stranded) -> bool {
    removals.iter().any(|r| {
        r.allowed
            && r.package == s.package
            && r.channel == s.channel
            && (r.removed != Removed::Entry || r.bundle == s.bundle)
    })
}

/// Every removal from OLD to NEW; `allow` decides which channels may lose entries.
pub fn removals(old: &Catalog, new: &Catalog, allow: &regex::Regex) -> Vec<Removal> {
    let mut out = Vec::new();
    for op in old.packages.values() {
        let np = new.packages.get(&op.name);
        for och in op.channels.values() {
            let allowed = allow.is_match(&och.name);
            let mut push = |bundle: &str, removed| {
                out.push(Removal {
                    package: op.name.clone(),
                    channel: och.name.clone(),
                    bundle: bundle.to_string(),
                    removed,
                    allowed,
                })
            };
            let Some(np) = np else {
                push("", Removed::Package);
                continue;
            };
            let Some(nch) = np.channels.get(&och.name) else {
                push("", Removed::Channel);
                continue;
            };
            for e in &och.entries {
                if !nch.entries.iter().any(|n| n.name == e.name) {
                    push(&e.name, Removed::Entry);
                }
            }
        }
    }
    out.sort();
    out
}

/// OLD cut down to the packages NEW has: what a fragment is compared with.
pub fn fragment_of(old: &Catalog, new: &Catalog) -> Catalog {
    Catalog {
        packages: old
            .packages
            .iter()
            .filter(|(name, _)| new.packages.contains_key(*name))
            .map(|(n, p)| (n.clone(), p.clone()))
            .collect(),
        others: Vec::new(),
    }
}

/// The allow pattern, compiled; a bad pattern is a usage error naming it.
pub fn allow_pattern(pattern: &str) -> Result<regex::Regex, crate::error::Error> {
    regex::Regex::new(pattern).map_err(|e| {
        crate::error::Error::Usage(format!("--allow-removal {pattern:?} is not a pattern: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Channel, ChannelEntry, Package};

    /// A channel: its name and entries.
    type Chan<'a> = (&'a str, &'a [&'a str]);

    fn cat(pkgs: &[(&str, &[Chan])]) -> Catalog {
        let mut c = Catalog::default();
        for (p, chans) in pkgs {
            let mut pkg = Package {
                name: p.to_string(),
                ..Default::default()
            };
            for (ch, entries) in *chans {
                pkg.channels.insert(
                    ch.to_string(),
                    Channel {
                        name: ch.to_string(),
                        entries: entries
                            .iter()
                            .map(|e| ChannelEntry {
                                name: e.to_string(),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    },
                );
            }
            c.packages.insert(p.to_string(), pkg);
        }
        c
    }

    #[test]
    fn entries_channels_and_packages_are_removals_allowed_by_channel_name() {
        let allow = allow_pattern(DEFAULT_ALLOW).unwrap();
        let old = cat(&[
            (
                "p",
                &[
                    ("stable", &["a", "b"]),
                    ("candidate-v1", &["a", "b"]),
                    ("fast", &["b"]),
                ],
            ),
            ("q", &[("c", &["q1"])]),
        ]);
        let new = cat(&[("p", &[("stable", &["a"]), ("candidate-v1", &["a"])])]);
        let r = removals(&old, &new, &allow);
        let got: Vec<_> = r
            .iter()
            .map(|r| (r.channel.as_str(), r.bundle.as_str(), r.removed, r.allowed))
            .collect();
        assert_eq!(
            got,
            vec![
                ("candidate-v1", "b", Removed::Entry, true),
                ("fast", "", Removed::Channel, false),
                ("stable", "b", Removed::Entry, false),
                ("c", "", Removed::Package, false),
            ]
        );
        // As a fragment, q is not compared.
        let r = removals(&fragment_of(&old, &new), &new, &allow);
        assert!(r.iter().all(|r| r.package == "p"), "{r:?}");
        // Unanchored: the pattern may match anywhere in the name.
        let allow = allow_pattern("pre-ga").unwrap();
        let old = cat(&[("p", &[("v2-pre-ga-x", &["a"])])]);
        let new = cat(&[("p", &[("v2-pre-ga-x", &[])])]);
        assert!(removals(&old, &new, &allow)[0].allowed);
        assert!(allow_pattern("(").is_err());
    }
}
