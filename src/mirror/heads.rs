//! One head per channel, after filtering and dependencies: where the kept entries of a channel
//! would leave two heads (an added dependency below a kept head, say), the entries on the
//! source channel's `replaces` chain between them are kept too, as catalog-filter keeps them
//! for a version range. A channel whose heads are not on one chain is left for validation to
//! report.

use super::filter::Filtered;
use crate::graph::{channel_head, Head};
use crate::model::Catalog;
use std::collections::HashMap;

/// Repairs `filtered`'s channels from `source`; returns a note per channel repaired.
pub fn repair(source: &Catalog, filtered: &mut Filtered) -> Vec<String> {
    let mut notes = Vec::new();
    for (pname, pkg) in filtered.catalog.packages.iter_mut() {
        let Some(src_pkg) = source.packages.get(pname) else {
            continue;
        };
        for (cname, ch) in pkg.channels.iter_mut() {
            if !matches!(channel_head(ch), Head::Many(_)) {
                continue;
            }
            let Some(src_ch) = src_pkg.channels.get(cname) else {
                continue;
            };
            let chain = chain(src_ch);
            let kept: Vec<usize> = chain
                .iter()
                .enumerate()
                .filter(|(_, n)| ch.entries.iter().any(|e| e.name == **n))
                .map(|(i, _)| i)
                .collect();
            let (Some(&top), Some(&bottom)) = (kept.first(), kept.last()) else {
                continue;
            };
            let mut added = Vec::new();
            for name in &chain[top..=bottom] {
                if ch.entries.iter().any(|e| e.name == *name) {
                    continue;
                }
                if let Some(e) = src_ch.entries.iter().find(|e| e.name == *name) {
                    ch.entries.push(e.clone());
                }
                if let Some(b) = src_pkg.bundles.get(*name) {
                    pkg.bundles.insert(name.to_string(), b.clone());
                }
                filtered
                    .kept
                    .entry(pname.clone())
                    .or_default()
                    .insert(name.to_string());
                super::filter::because(
                    &mut filtered.why,
                    pname,
                    name,
                    super::filter::Reason::SingleHead {
                        channel: cname.clone(),
                    },
                );
                added.push(name.to_string());
            }
            if !added.is_empty() {
                notes.push(format!(
                    "channel {cname:?} of package {pname:?} would have had two heads: kept {} on its replaces chain",
                    added.join(", ")
                ));
            }
        }
    }
    notes
}

/// The channel's `replaces` chain from its head down (only the head when it has several).
fn chain(ch: &crate::model::Channel) -> Vec<&str> {
    let by_name: HashMap<&str, &str> = ch
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e.replaces.as_str()))
        .collect();
    let mut out = Vec::new();
    let Head::One(mut at) = channel_head(ch) else {
        return out;
    };
    while let Some(&next) = by_name.get(at) {
        if out.contains(&at) {
            break;
        }
        out.push(at);
        at = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Bundle, Channel, ChannelEntry, Package};

    fn entry(name: &str, replaces: &str) -> ChannelEntry {
        ChannelEntry {
            name: name.into(),
            replaces: replaces.into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_chain_between_two_heads_is_kept() {
        let entries = vec![entry("a.1", ""), entry("a.2", "a.1"), entry("a.3", "a.2")];
        let mut src = Package {
            name: "a".into(),
            default_channel: "stable".into(),
            ..Default::default()
        };
        src.channels.insert(
            "stable".into(),
            Channel {
                name: "stable".into(),
                entries: entries.clone(),
                ..Default::default()
            },
        );
        for e in &entries {
            src.bundles.insert(
                e.name.clone(),
                Bundle {
                    name: e.name.clone(),
                    package: "a".into(),
                    ..Default::default()
                },
            );
        }
        let mut source = Catalog::default();
        source.packages.insert("a".into(), src.clone());
        // Kept: the head and the oldest, as a dependency on "<1.2" and the default head give.
        let mut kept = src.clone();
        kept.channels.get_mut("stable").unwrap().entries =
            vec![entries[0].clone(), entries[2].clone()];
        kept.bundles.remove("a.2");
        let mut f = Filtered::default();
        f.catalog.packages.insert("a".into(), kept);
        f.kept
            .insert("a".into(), ["a.1", "a.3"].map(String::from).into());
        let notes = repair(&source, &mut f);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("a.2"), "{notes:?}");
        let ch = &f.catalog.packages["a"].channels["stable"];
        assert!(matches!(channel_head(ch), Head::One("a.3")));
        assert!(f.catalog.packages["a"].bundles.contains_key("a.2"));
        assert!(f.kept["a"].contains("a.2"));
        // Nothing more to do the second time.
        assert!(repair(&source, &mut f).is_empty());
    }
}
