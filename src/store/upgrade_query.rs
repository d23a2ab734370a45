//! Store-backed view of a package's update graph for the upgrade resolver.
//!
//! [`Store`] implements [`UpgradeGraph`] with per-package indexed queries: bundle facts from
//! `bundle`/`bundle_property`/`channel_entry`, edges from the materialized `edge` table, and
//! classic's chain by handing the stored entries to [`graph::classic_chain`]. The one edge the
//! table cannot hold is a skipRange edge toward an installed `name@version` that is not in the
//! catalog (the table only has skipRange edges toward catalog bundles); for it the stored
//! skipRanges are evaluated with [`graph::EntryRule`], the same rule that filled the table.

use super::Store;
use crate::graph::{
    self,
    resolve::{BundleFacts, Installed, PackageFacts, UpgradeGraph},
    EdgeKind,
};
use crate::model::{prop, Bundle, Channel, ChannelEntry, Property};
use anyhow::{anyhow, Result};
use rusqlite::OptionalExtension;
use std::collections::{BTreeMap, BTreeSet};

impl Store {
    /// The stored entries of one channel, in catalog order.
    fn stored_entries(&self, package: &str, channel: &str) -> Result<Vec<ChannelEntry>> {
        let c = self.conn()?;
        let mut st = c.prepare_cached(
            "SELECT bundle, replaces, skips, skip_range FROM channel_entry
             WHERE package = ?1 AND channel = ?2 ORDER BY seq",
        )?;
        let rows = st.query_map([package, channel], |r| {
            Ok(ChannelEntry {
                name: r.get(0)?,
                replaces: r.get(1)?,
                skips: r.get::<_, super::columns::Skips>(2)?.0,
                skip_range: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

impl UpgradeGraph for Store {
    fn package_names(&self) -> Result<Vec<String>> {
        let c = self.conn()?;
        let mut st = c.prepare_cached("SELECT name FROM package ORDER BY name")?;
        let names = st.query_map([], |r| r.get(0))?;
        Ok(names.collect::<Result<_, _>>()?)
    }
    fn package_facts(&self, package: &str) -> Result<Option<PackageFacts>> {
        let c = self.conn()?;
        let Some(default_channel) = c
            .prepare_cached("SELECT default_channel FROM package WHERE name = ?1")?
            .query_row([package], |r| r.get::<_, String>(0))
            .optional()?
        else {
            return Ok(None);
        };
        let mut st =
            c.prepare_cached("SELECT name FROM channel WHERE package = ?1 ORDER BY name")?;
        let channels: Vec<String> = st
            .query_map([package], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let mut member: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut st =
            c.prepare_cached("SELECT bundle, channel FROM channel_entry WHERE package = ?1")?;
        let mut rows = st.query([package])?;
        while let Some(r) = rows.next()? {
            member.entry(r.get(0)?).or_default().insert(r.get(1)?);
        }
        // Only the properties the resolver reads; BundleFacts::of interprets them.
        let mut bundles: BTreeMap<String, (Bundle, bool)> = BTreeMap::new();
        let mut st = c.prepare_cached(
            "SELECT b.name, b.deprecation IS NOT NULL, p.type, p.value
             FROM bundle b LEFT JOIN bundle_property p ON p.bundle_id = b.id
               AND p.type IN (?2, ?3, ?4, ?5, ?6)
             WHERE b.package = ?1 ORDER BY b.name, p.seq",
        )?;
        let mut rows = st.query([
            package,
            prop::PACKAGE,
            prop::GVK_REQUIRED,
            prop::PACKAGE_REQUIRED,
            prop::CONSTRAINT,
            prop::MAX_OCP,
        ])?;
        while let Some(r) = rows.next()? {
            let name: String = r.get(0)?;
            let deprecated: bool = r.get(1)?;
            let (b, _) = bundles.entry(name.clone()).or_insert_with(|| {
                let b = Bundle {
                    name,
                    package: package.to_string(),
                    ..Default::default()
                };
                (b, deprecated)
            });
            if let (Some(t), Some(v)) = (r.get::<_, Option<String>>(2)?, r.get(3)?) {
                b.properties.push(Property {
                    r#type: t,
                    value: v,
                });
            }
        }
        Ok(Some(PackageFacts {
            name: package.to_string(),
            default_channel,
            channels,
            // A stored bundle is a member of some channel (validation saw to it): one that is
            // not is a bad row, not a bundle of no channels.
            bundles: bundles
                .into_iter()
                .map(|(n, (b, dep))| {
                    let chans = member.remove(&n).ok_or_else(|| {
                        anyhow!("the database is damaged: bundle {n:?} of package {package:?} is in no channel")
                    })?;
                    Ok((n, BundleFacts::of(&b, dep, chans)))
                })
                .collect::<Result<_>>()?,
        }))
    }

    fn classic_chain(&self, package: &str, channel: &str) -> Result<Vec<String>> {
        let ch = Channel {
            name: channel.to_string(),
            entries: self.stored_entries(package, channel)?,
            ..Default::default()
        };
        Ok(graph::classic_chain(&ch)
            .into_iter()
            .map(str::to_string)
            .collect())
    }

    fn upgrades_from(
        &self,
        package: &str,
        channel: &str,
        inst: &Installed,
    ) -> Result<Vec<(String, EdgeKind)>> {
        let mut out = Vec::new();
        {
            let c = self.conn()?;
            let mut st = c.prepare_cached(
                "SELECT from_bundle, kind FROM edge
                 WHERE package = ?1 AND channel = ?2 AND to_bundle = ?3",
            )?;
            let mut rows = st.query([package, channel, inst.name.as_str()])?;
            while let Some(r) = rows.next()? {
                let kind: String = r.get(1)?;
                let kind =
                    EdgeKind::parse(&kind).ok_or_else(|| anyhow!("unknown edge kind {kind:?}"))?;
                out.push((r.get(0)?, kind));
            }
        }
        if !inst.in_catalog {
            for e in self.stored_entries(package, channel)? {
                if e.skip_range.is_empty() {
                    continue;
                }
                let rule = graph::EntryRule::new(&e);
                for k in rule.edges_from(&inst.name, Some(&inst.version)) {
                    if k == EdgeKind::SkipRange {
                        out.push((e.name.clone(), k));
                    }
                }
            }
        }
        Ok(out)
    }
}
