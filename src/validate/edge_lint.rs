//! Warnings about single update edges that authors get wrong (`opreg validate --upgrades`),
//! each with a `help:` line naming what to change and where:
//!
//! * a `replaces` or `skips` naming no bundle of the package, when the name is a near miss of
//!   one that exists (a typo, or a name without the package prefix: operator-registry#1101).
//!   Upstream accepts names of bundles that are not in the catalog (operator-registry#691),
//!   so a name in the package's naming scheme with a well-formed version (a truncated
//!   channel's tail replacing a removed bundle) is not reported, and a versioned name in
//!   another scheme only when a near name has the same version;
//! * a `replaces` or `skips` naming a newer version: a subscriber at the newer bundle is
//!   offered the older one as an upgrade (at the channel head, that is the "head is not the
//!   highest version" warning instead);
//! * a skipRange that covers its own bundle's version (its upper bound is above the bundle:
//!   operator-registry#2090), when it covers no newer bundle of the channel (that case is
//!   [`super::upgrade_lint`]'s downgrade warning).

use super::help::file_of;
use crate::diag::{Diagnostic, Rule};
use crate::graph::{channel_head, EntryRule, Head, Versions};
use crate::model::{Catalog, Channel, Package};
use std::collections::BTreeSet;

/// The warnings of this module for every channel of `cat`.
pub fn lint(cat: &Catalog) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for pkg in cat.packages.values() {
        let versions = Versions::of(pkg);
        let known: BTreeSet<&str> = pkg
            .bundles
            .keys()
            .map(String::as_str)
            .chain(
                pkg.channels
                    .values()
                    .flat_map(|c| c.entries.iter().map(|e| e.name.as_str())),
            )
            .collect();
        for ch in pkg.channels.values() {
            dangling(pkg, ch, &known, &mut out);
            backwards(pkg, ch, &versions, &mut out);
            self_covering(pkg, ch, &versions, &mut out);
        }
    }
    out
}

fn warn(pkg: &Package, ch: &Channel, bundle: &str, msg: String, help: String) -> Diagnostic {
    Diagnostic::warning(Rule::UpgradeLint, msg)
        .at(&ch.origin)
        .package(&pkg.name)
        .channel(&ch.name)
        .bundle(bundle)
        .help(help)
}

/// Names in replaces/skips that no bundle has, but that are a near miss of one that does.
fn dangling(pkg: &Package, ch: &Channel, known: &BTreeSet<&str>, out: &mut Vec<Diagnostic>) {
    for e in &ch.entries {
        let named = std::iter::once(("replaces", e.replaces.as_str()))
            .chain(e.skips.iter().map(|s| ("skips", s.as_str())));
        for (field, name) in named {
            if name.is_empty() || known.contains(name) {
                continue;
            }
            let mut near: Vec<&str> = known
                .iter()
                .copied()
                .filter(|k| k.ends_with(name) && k.len() > name.len())
                .collect();
            if near.is_empty() {
                near = match versioned(name) {
                    // A removed bundle of the package's naming scheme, not a typo.
                    Some((prefix, _)) if known.iter().any(|k| k.starts_with(prefix)) => continue,
                    // Another scheme: a typo only if a near name has the same version.
                    Some((_, v)) => crate::text::nearest(
                        name,
                        known
                            .iter()
                            .copied()
                            .filter(|k| versioned(k).is_some_and(|(_, kv)| kv == v)),
                        3,
                    ),
                    None => crate::text::nearest(name, known.iter().copied(), 3),
                };
            }
            if near.is_empty() {
                continue;
            }
            let msg = format!(
                "{} {field} {name:?}, which is no bundle of package {:?}: no subscriber upgrades \
                 through that edge{}",
                e.name,
                pkg.name,
                crate::text::did_you_mean(&near)
            );
            let help = format!(
                "change {name:?} in the {field} of {} (in {}) to {:?}",
                e.name,
                file_of(pkg, &e.name),
                near[0]
            );
            out.push(warn(pkg, ch, &e.name, msg, help));
        }
    }
}

/// A bundle name split into its prefix and a well-formed version (`p.v1.0.0` → `p.v`, 1.0.0),
/// at the first place a version parses.
fn versioned(name: &str) -> Option<(&str, semver::Version)> {
    let bytes = name.as_bytes();
    (0..bytes.len())
        .filter(|&i| bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit()))
        .find_map(|i| {
            let v = crate::version::blang::parse_tolerant(&name[i..]).ok()?;
            Some((&name[..i], v))
        })
}

/// replaces/skips that point at a newer version.
/// A head that points at a newer entry of its channel is [`super::upgrade_lint`]'s "head is not
/// the highest version" warning, not reported again here.
fn backwards(pkg: &Package, ch: &Channel, versions: &Versions, out: &mut Vec<Diagnostic>) {
    let head = match channel_head(ch) {
        Head::One(h) => Some(h),
        _ => None,
    };
    let in_channel = |n: &str| ch.entries.iter().any(|e| e.name == n);
    for e in &ch.entries {
        let Some(ev) = versions.get(&e.name) else {
            continue;
        };
        let named = std::iter::once(("replaces", e.replaces.as_str()))
            .chain(e.skips.iter().map(|s| ("skips", s.as_str())));
        for (field, name) in named {
            let Some(nv) = versions.get(name) else {
                continue;
            };
            if nv.cmp_precedence(ev).is_le() || (head == Some(e.name.as_str()) && in_channel(name))
            {
                continue;
            }
            let msg = format!(
                "{} ({ev}) {field} the newer {name} ({nv}): a subscriber at {name} is offered \
                 {} as an upgrade, a downgrade",
                e.name, e.name
            );
            let help = match field {
                "replaces" => format!(
                    "swap the edge: {name} should replace {} (edit the replaces of {} in {} and of {name} in {})",
                    e.name,
                    e.name,
                    file_of(pkg, &e.name),
                    file_of(pkg, name)
                ),
                _ => format!(
                    "remove {name} from the skips of {} (in {}); only older versions belong there",
                    e.name,
                    file_of(pkg, &e.name)
                ),
            };
            out.push(warn(pkg, ch, &e.name, msg, help));
        }
    }
}

/// skipRanges that cover their own bundle but no newer bundle of the channel.
fn self_covering(pkg: &Package, ch: &Channel, versions: &Versions, out: &mut Vec<Diagnostic>) {
    for e in &ch.entries {
        let rule = EntryRule::new(e);
        let (Some(range), Some(ev)) = (&rule.range, versions.get(&e.name)) else {
            continue;
        };
        if !range.matches(ev) {
            continue;
        }
        let covers_newer = ch.entries.iter().any(|o| {
            versions
                .get(&o.name)
                .is_some_and(|ov| ov.cmp_precedence(ev).is_gt() && range.matches(ov))
        });
        if covers_newer {
            continue;
        }
        let msg = format!(
            "{} ({ev}) has skipRange {:?}, which covers its own version: the range reaches above \
             the bundle, so any newer bundle added later becomes a downgrade target",
            e.name, e.skip_range
        );
        let help = format!(
            "bound the skipRange of {} (in {}) below its own version, e.g. \"<{ev}\"",
            e.name,
            file_of(pkg, &e.name)
        );
        out.push(warn(pkg, ch, &e.name, msg, help));
    }
}
