//! Rebuilding channels from upstream's materialized walks: the `replaces` chain from the head
//! entry, and the skips the other pointers encode.

use super::rows::{BundleRow, EntryRow};
use super::{Reader, Tag};
use crate::diag::Rule;
use crate::model::*;
use std::collections::{BTreeMap, HashMap, HashSet};

impl Reader<'_> {
    /// Reads a channel's materialized walk back into entries (see the module docs).
    pub(super) fn channel_from_entries(
        &mut self,
        pkg: &str,
        ch: &str,
        stored_head: &str,
        rows: &[EntryRow],
        bundles: &BTreeMap<String, BundleRow>,
    ) -> Channel {
        let by_id: HashMap<i64, &EntryRow> = rows.iter().map(|r| (r.id, r)).collect();
        // The head entry: the stored head at its smallest depth, else the shallowest entry.
        let head_row = rows
            .iter()
            .filter(|r| r.bundle == stored_head)
            .min_by_key(|r| (r.depth, r.id))
            .or_else(|| rows.iter().min_by_key(|r| (r.depth, r.id)))
            .expect("rows is not empty");
        if head_row.bundle != stored_head {
            self.warn(
                Rule::ChannelHead,
                format!(
                    "legacy quirk: stored head {stored_head:?} has no channel entry; the walk is read from {:?}",
                    head_row.bundle
                ),
            )
            .in_package(pkg)
            .in_channel(ch);
        }
        // The replaces chain: entries reachable from the head entry.
        let chain: HashSet<i64> = crate::graph::walk_replaces(Some(head_row.id), |id: &i64| {
            by_id[id].replaces.filter(|t| by_id.contains_key(t))
        })
        .collect();
        // Bundle names in walk order (depth, then id): real bundles become entries.
        let mut order: Vec<&EntryRow> = rows.iter().collect();
        order.sort_by_key(|r| (r.depth, r.id));
        let mut entries: Vec<ChannelEntry> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for r in &order {
            if r.bundle.is_empty() {
                continue;
            }
            // A name with no operatorbundle row is a synthetic skip target: an edge end only.
            if let Some(b) = bundles.get(&r.bundle) {
                if !index.contains_key(r.bundle.as_str()) {
                    index.insert(&r.bundle, entries.len());
                    entries.push(ChannelEntry {
                        name: r.bundle.clone(),
                        skip_range: b.skip_range.clone(),
                        ..Default::default()
                    });
                }
            }
        }
        // Pointers: from the chain → replaces; from anywhere else → skips.
        for r in rows.iter().filter(|r| !r.bundle.is_empty()) {
            let Some(t) = r.replaces else { continue };
            let Some(target) = by_id.get(&t) else {
                self.warn(
                    Rule::Parse,
                    format!(
                        "legacy quirk: channel_entry {} of {:?} points at missing entry {t}; pointer ignored",
                        r.id, r.bundle
                    ),
                )
                .in_package(pkg)
                .in_channel(ch);
                continue;
            };
            if target.bundle.is_empty() {
                continue;
            }
            let Some(&i) = index.get(r.bundle.as_str()) else {
                // A synthetic name pointing somewhere: not expressible, and never written by
                // upstream's walks.
                self.warn(
                    Rule::Membership,
                    format!(
                        "legacy quirk: synthetic entry {:?} points at {:?}; FBC has no entry to carry that edge, dropped",
                        r.bundle, target.bundle
                    ),
                )
                .in_package(pkg)
                .in_channel(ch);
                continue;
            };
            let e = &mut entries[i];
            if chain.contains(&r.id) {
                if !e.replaces.is_empty() && e.replaces != target.bundle {
                    self.warn(
                        Rule::Cycle,
                        format!(
                            "legacy quirk: {:?} replaces both {:?} and {:?} on the chain; keeping the first",
                            e.name, e.replaces, target.bundle
                        ),
                    )
                    .in_package(pkg)
                    .in_channel(ch);
                } else {
                    e.replaces = target.bundle.clone();
                }
            } else if !e.skips.contains(&target.bundle) {
                e.skips.push(target.bundle.clone());
            }
        }
        // The head FBC computes must be the head upstream stored.
        let probe = Channel {
            name: ch.to_string(),
            entries: entries.clone(),
            ..Default::default()
        };
        if let crate::graph::Head::One(h) = crate::graph::channel_head(&probe) {
            if h != stored_head {
                self.warn(
                    Rule::ChannelHead,
                    format!(
                        "legacy quirk: the index stores head {stored_head:?}, but the entries read back make {h:?} the head"
                    ),
                )
                .in_package(pkg)
                .in_channel(ch);
            }
        }
        Channel {
            name: ch.to_string(),
            entries,
            properties: Vec::new(),
            origin: self.origin.clone(),
        }
    }
}
