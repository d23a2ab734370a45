//! `opreg list` on a built database: the [`crate::inventory`] rows read straight from the
//! `package`, `channel`, `channel_entry` and `bundle` tables, without loading the catalog.
//! Only the head of each default channel has its properties read, for the display name.

use super::Store;
use crate::inventory::{self, BundleRow, ChannelRow, PackageRow};
use crate::model::{prop, Bundle, Property};
use anyhow::Result;
use rusqlite::OptionalExtension;

impl Store {
    /// True when the database holds a package of that name.
    pub fn has_package(&self, package: &str) -> Result<bool> {
        let c = self.conn()?;
        Ok(
            c.query_row("SELECT 1 FROM package WHERE name = ?1", [package], |_| {
                Ok(())
            })
            .optional()?
            .is_some(),
        )
    }

    /// Every package (or one), by name, with the display name of its default channel's head.
    pub fn list_package_rows(&self, package: Option<&str>) -> Result<Vec<PackageRow>> {
        let c = self.conn()?;
        let mut st = c.prepare(
            "SELECT p.name, p.default_channel, b.id FROM package p
             LEFT JOIN channel ch ON ch.package = p.name AND ch.name = p.default_channel
             LEFT JOIN bundle b ON b.package = p.name AND b.name = ch.head
             WHERE ?1 IS NULL OR p.name = ?1 ORDER BY p.name",
        )?;
        let rows: Vec<(String, String, Option<i64>)> = st
            .query_map([package], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        let mut props = c.prepare(
            "SELECT type, value FROM bundle_property WHERE bundle_id = ?1 AND type IN (?2, ?3)
             ORDER BY seq",
        )?;
        let mut out = Vec::with_capacity(rows.len());
        for (name, default_channel, head) in rows {
            let display_name = match head {
                Some(id) => {
                    let properties = props
                        .query_map(
                            rusqlite::params![id, prop::CSV_METADATA, prop::BUNDLE_OBJECT],
                            |r| {
                                Ok(Property {
                                    r#type: r.get(0)?,
                                    value: r.get(1)?,
                                })
                            },
                        )?
                        .collect::<Result<Vec<_>, _>>()?;
                    inventory::display_name(&Bundle {
                        properties,
                        ..Bundle::default()
                    })
                }
                None => String::new(),
            };
            out.push(PackageRow {
                name,
                display_name,
                default_channel,
            });
        }
        Ok(out)
    }

    /// Every channel (of every package, or of one), by package and name, with its head.
    pub fn list_channel_rows(&self, package: Option<&str>) -> Result<Vec<ChannelRow>> {
        let c = self.conn()?;
        let mut st = c.prepare(
            "SELECT package, name, head FROM channel WHERE ?1 IS NULL OR package = ?1
             ORDER BY package, name",
        )?;
        let v = st
            .query_map([package], |r| {
                Ok(ChannelRow {
                    package: r.get(0)?,
                    name: r.get(1)?,
                    head: r.get(2)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(v)
    }

    /// Every channel entry (of every package, or of one), sorted by
    /// [`inventory::sort_bundles`].
    pub fn list_bundle_rows(&self, package: Option<&str>) -> Result<Vec<BundleRow>> {
        let c = self.conn()?;
        let mut st = c.prepare(
            "SELECT e.package, e.channel, e.bundle, COALESCE(b.version, ''), e.replaces, e.skips,
                    e.skip_range, COALESCE(b.image, '')
             FROM channel_entry e LEFT JOIN bundle b ON b.package = e.package AND b.name = e.bundle
             WHERE ?1 IS NULL OR e.package = ?1",
        )?;
        let mut v: Vec<BundleRow> = st
            .query_map([package], |r| {
                Ok(BundleRow {
                    package: r.get(0)?,
                    channel: r.get(1)?,
                    name: r.get(2)?,
                    version: r.get(3)?,
                    replaces: r.get(4)?,
                    skips: r.get::<_, super::columns::Skips>(5)?.0,
                    skip_range: r.get(6)?,
                    image: r.get(7)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        inventory::sort_bundles(&mut v);
        Ok(v)
    }
}
