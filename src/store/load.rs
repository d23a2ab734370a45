//! Reading a built database back into the model: `render` of a database, using one as a
//! SOURCE of another ingest, and upgrade resolution from the CLI.

use super::columns::{Properties, Skips};
use super::Store;
use crate::model::*;
use anyhow::Result;

/// What [`Store::for_each_package`] calls: a part of the catalog and its bundles.
pub type PartFn<'a> =
    dyn FnMut(Catalog, &mut (dyn Iterator<Item = std::io::Result<Bundle>> + '_)) -> Result<()> + 'a;

impl Store {
    /// Reads the whole catalog back into the model (render, re-ingest, resolution).
    pub fn load_catalog(&self) -> Result<Catalog> {
        self.load_where(None, true)
    }

    /// Calls `f` with the catalog one package at a time, in name order (the package and the
    /// other metas of one package name, without bundles, and an iterator over its bundles in
    /// name order, read one at a time), then with the metas of no package: in memory, never
    /// more than one package's head and one bundle. Rendering each in turn writes what
    /// rendering the whole would.
    pub fn for_each_package(&self, f: &mut PartFn<'_>) -> Result<()> {
        let names: Vec<String> = {
            let c = self.conn()?;
            let mut st = c.prepare(
                "SELECT name FROM package UNION SELECT package FROM custom_meta WHERE package != '' ORDER BY 1",
            )?;
            let names = st.query_map([], |r| r.get(0))?;
            names.collect::<rusqlite::Result<_>>()?
        };
        let origin = Origin::file(self.inner.path.display().to_string());
        for n in names.iter().map(String::as_str).chain([""]) {
            let head = self.load_where(Some(n), false)?;
            let c = self.conn()?;
            let mut list =
                c.prepare("SELECT id, name, image FROM bundle WHERE package = ?1 ORDER BY name")?;
            let rows = list.query_map([n], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get(2)?))
            })?;
            let rows: Vec<(i64, String, String)> = rows.collect::<rusqlite::Result<_>>()?;
            let mut props = c.prepare(
                "SELECT type, value FROM bundle_property WHERE bundle_id = ?1 ORDER BY seq",
            )?;
            let mut images = c.prepare(
                "SELECT name, image FROM related_image WHERE bundle_id = ?1 ORDER BY seq",
            )?;
            let mut bundles = rows.into_iter().map(|(id, name, image)| {
                let mut b = Bundle {
                    name,
                    package: n.to_string(),
                    image,
                    origin: origin.clone(),
                    ..Default::default()
                };
                let mut read = |b: &mut Bundle| -> rusqlite::Result<()> {
                    b.properties = props
                        .query_map([id], |r| property_at(r, 0))?
                        .collect::<rusqlite::Result<_>>()?;
                    b.related_images = images
                        .query_map([id], |r| related_image_at(r, 0))?
                        .collect::<rusqlite::Result<_>>()?;
                    Ok(())
                };
                read(&mut b).map(|()| b).map_err(std::io::Error::other)
            });
            f(head, &mut bundles)?;
        }
        Ok(())
    }

    /// The catalog, or only what belongs to the package named `package` (`""`: the metas of no
    /// package); without its bundles unless `with_bundles`.
    fn load_where(&self, package: Option<&str>, with_bundles: bool) -> Result<Catalog> {
        let c = self.conn()?;
        let origin = Origin::file(self.inner.path.display().to_string());
        let mut cat = Catalog::default();
        // Every query below, narrowed to the package when one is asked for.
        let args: Vec<&str> = package.into_iter().collect();
        let args = || rusqlite::params_from_iter(args.iter());
        let only = |clause: &str| match package {
            Some(_) => format!(" WHERE {clause}"),
            None => String::new(),
        };
        let mut st = c.prepare(&format!("SELECT name, default_channel, description, icon_data, icon_mediatype, properties FROM package{} ORDER BY name", only("name = ?1")))?;
        let rows = st.query_map(args(), |r| {
            Ok(Package {
                name: r.get(0)?,
                default_channel: r.get(1)?,
                description: r.get(2)?,
                icon: icon_at(r, 3)?,
                properties: r.get::<_, Properties>(5)?.0,
                origin: origin.clone(),
                ..Default::default()
            })
        })?;
        for p in rows {
            let p = p?;
            cat.packages.insert(p.name.clone(), p);
        }
        let mut st = c.prepare(&format!(
            "SELECT package, name, properties FROM channel{} ORDER BY package, name",
            only("package = ?1")
        ))?;
        let mut rows = st.query(args())?;
        while let Some(r) = rows.next()? {
            let pkg: String = r.get(0)?;
            let name: String = r.get(1)?;
            if let Some(p) = cat.packages.get_mut(&pkg) {
                p.channels.insert(
                    name.clone(),
                    Channel {
                        name,
                        entries: Vec::new(),
                        properties: r.get::<_, Properties>(2)?.0,
                        origin: origin.clone(),
                    },
                );
            }
        }
        let mut st = c.prepare(&format!("SELECT package, channel, bundle, replaces, skips, skip_range FROM channel_entry{} ORDER BY package, channel, seq", only("package = ?1")))?;
        let mut rows = st.query(args())?;
        while let Some(r) = rows.next()? {
            let (pkg, ch): (String, String) = (r.get(0)?, r.get(1)?);
            if let Some(c) = cat
                .packages
                .get_mut(&pkg)
                .and_then(|p| p.channels.get_mut(&ch))
            {
                c.entries.push(ChannelEntry {
                    name: r.get(2)?,
                    replaces: r.get(3)?,
                    skips: r.get::<_, Skips>(4)?.0,
                    skip_range: r.get(5)?,
                });
            }
        }
        if with_bundles {
            load_bundles(&c, &mut cat, package, &origin)?;
        }
        let mut st = c.prepare(&format!(
            "SELECT package, schema, name, message FROM deprecation_entry{} ORDER BY package, seq",
            only("package = ?1")
        ))?;
        let mut rows = st.query(args())?;
        while let Some(r) = rows.next()? {
            let pkg: String = r.get(0)?;
            if let Some(p) = cat.packages.get_mut(&pkg) {
                p.deprecations
                    .get_or_insert_with(|| Deprecations {
                        entries: Vec::new(),
                        origin: origin.clone(),
                    })
                    .entries
                    .push(DeprecationEntry {
                        schema: r.get(1)?,
                        name: r.get(2)?,
                        message: r.get(3)?,
                    });
            }
        }
        let mut st = c.prepare(&format!(
            "SELECT schema, package, name, blob FROM custom_meta{} ORDER BY seq",
            only("package = ?1")
        ))?;
        let metas = st.query_map(args(), |r| {
            Ok(Meta {
                schema: r.get(0)?,
                package: r.get(1)?,
                name: r.get(2)?,
                blob: r.get(3)?,
                origin: origin.clone(),
            })
        })?;
        for m in metas {
            cat.others.push(m?);
        }
        Ok(cat)
    }
}

/// The bundles of `cat` (of `package` only, when given): their rows, properties and related
/// images, into the packages already read.
fn load_bundles(
    c: &rusqlite::Connection,
    cat: &mut Catalog,
    package: Option<&str>,
    origin: &Origin,
) -> Result<()> {
    let args = || rusqlite::params_from_iter(package.iter());
    let only = |clause: &str| match package {
        Some(_) => format!(" WHERE {clause}"),
        None => String::new(),
    };
    let of_bundles = only("bundle_id IN (SELECT id FROM bundle WHERE package = ?1)");
    let mut ids = std::collections::HashMap::new();
    let mut st = c.prepare(&format!(
        "SELECT id, package, name, image FROM bundle{} ORDER BY id",
        only("package = ?1")
    ))?;
    let mut rows = st.query(args())?;
    while let Some(r) = rows.next()? {
        let (id, pkg, name): (i64, String, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
        ids.insert(id, (pkg.clone(), name.clone()));
        if let Some(p) = cat.packages.get_mut(&pkg) {
            p.bundles.insert(
                name.clone(),
                Bundle {
                    name,
                    package: pkg,
                    image: r.get(3)?,
                    origin: origin.clone(),
                    ..Default::default()
                },
            );
        }
    }
    let mut st = c.prepare(&format!(
        "SELECT bundle_id, type, value FROM bundle_property{of_bundles} ORDER BY bundle_id, seq"
    ))?;
    let mut rows = st.query(args())?;
    while let Some(r) = rows.next()? {
        if let Some(b) = bundle_by_id(cat, &ids, r.get(0)?) {
            b.properties.push(property_at(r, 1)?);
        }
    }
    let mut st = c.prepare(&format!(
        "SELECT bundle_id, name, image FROM related_image{of_bundles} ORDER BY bundle_id, seq"
    ))?;
    let mut rows = st.query(args())?;
    while let Some(r) = rows.next()? {
        if let Some(b) = bundle_by_id(cat, &ids, r.get(0)?) {
            b.related_images.push(related_image_at(r, 1)?);
        }
    }
    Ok(())
}

/// A package's icon from its `icon_data` and `icon_mediatype` columns (at `i` and `i + 1`):
/// both or neither, as the builder writes them; one without the other is a bad column.
fn icon_at(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<Icon>> {
    match (
        r.get::<_, Option<String>>(i)?,
        r.get::<_, Option<String>>(i + 1)?,
    ) {
        (Some(base64data), Some(mediatype)) => Ok(Some(Icon {
            base64data,
            mediatype,
        })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(rusqlite::Error::InvalidColumnType(
            i + 1,
            "icon_mediatype".into(),
            rusqlite::types::Type::Null,
        )),
        (None, Some(_)) => Err(rusqlite::Error::InvalidColumnType(
            i,
            "icon_data".into(),
            rusqlite::types::Type::Null,
        )),
    }
}

fn bundle_by_id<'c>(
    cat: &'c mut Catalog,
    ids: &std::collections::HashMap<i64, (String, String)>,
    id: i64,
) -> Option<&'c mut Bundle> {
    let (pkg, name) = ids.get(&id)?;
    cat.packages.get_mut(pkg)?.bundles.get_mut(name)
}

/// A `bundle_property` row's (type, value), from column `at`.
fn property_at(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Property> {
    Ok(Property {
        r#type: r.get(at)?,
        value: r.get(at + 1)?,
    })
}

/// A `related_image` row's (name, image), from column `at`.
fn related_image_at(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<RelatedImage> {
    Ok(RelatedImage {
        name: r.get(at)?,
        image: r.get(at + 1)?,
    })
}
