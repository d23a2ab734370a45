//! The questions the server asks, one per RPC, each answered whole here: a handler checks its
//! request's required fields and makes one call. An answer that does not exist is a
//! [`NotFound`], whose text is what `opm serve` says for that RPC, quoting included (see the
//! registry semantics in the shared spec): each text is written once, in [`NotFound`].
//!
//! Packages and channels come from the in-memory [`PackageIndex`]; bundle answers are read by
//! one statement each ([`super::query`]); the provider and replacement answers decided at
//! ingest are looked up, not computed ([`super::answers`]).

use super::columns::Skips;
use super::package_index::{ChannelRef, PackageIndex, Unresolved};
use super::query::bundle_select;
use super::Store;
use crate::api;
use crate::wire::EncodedBundle;
use anyhow::Result;
use rusqlite::OptionalExtension;
use std::sync::OnceLock;

/// An answer, or why there is none; the outer error is the store's own failure.
pub type Answer<T> = Result<Result<T, NotFound>>;

/// Why an RPC has no answer, in upstream's words for that RPC.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotFound {
    /// GetPackage, GetBundle, GetBundleForChannel.
    #[error("package {0:?} not found")]
    Package(String),
    /// GetBundleThatReplaces, which names the package unquoted.
    #[error("package {0} not found")]
    PackageUnquoted(String),
    #[error("package {0:?}, channel {1:?} not found")]
    Channel(String, String),
    #[error("package {0:?}, channel {1:?}, bundle {2:?} not found")]
    Bundle(String, String, String),
    /// GetBundleThatReplaces: no entry of the channel replaces or skips the name.
    #[error("no entry found for package {0:?}, channel {1:?}")]
    NoReplacement(String, String),
    /// GetChannelEntriesThatReplace.
    #[error("no channel entries found that replace {0}")]
    NoReplacingEntries(String),
    /// GetChannelEntriesThatProvide, GetLatestChannelEntriesThatProvide, and
    /// GetDefaultBundleThatProvides when no channel head provides the API.
    #[error("no channel entries found that provide group:{0:?} version:{1:?} kind:{2:?}")]
    NoProvider(String, String, String),
    /// GetDefaultBundleThatProvides: heads provide the API, none in a default channel.
    #[error("no entry found that provides group:{0:?} version:{1:?} kind:{2:?}")]
    NoDefaultProvider(String, String, String),
}

/// A channel entry with its declared edges, as the provider questions read it.
struct EntryRow {
    entry: api::ChannelEntry,
    skips: Vec<String>,
    position: i64,
}

impl Store {
    /// The package index, loaded on first use.
    pub fn package_index(&self) -> Result<&PackageIndex> {
        if let Some(ix) = self.inner.packages.get() {
            return Ok(ix);
        }
        let ix = PackageIndex::load(&*self.conn()?)?;
        Ok(self.inner.packages.get_or_init(|| ix))
    }

    /// ListPackages: every package name, sorted.
    pub fn package_names(&self) -> Result<Vec<String>> {
        Ok(self.package_index()?.names().map(str::to_string).collect())
    }

    /// GetPackage.
    pub fn package(&self, name: &str) -> Answer<api::Package> {
        Ok(match self.package_index()?.package(name) {
            Some(p) => Ok(p.to_api()),
            None => Err(NotFound::Package(name.to_string())),
        })
    }

    /// A channel of the index; `unquoted` for GetBundleThatReplaces' words.
    fn channel(&self, package: &str, channel: &str, unquoted: bool) -> Answer<ChannelRef<'_>> {
        Ok(self
            .package_index()?
            .channel(package, channel)
            .map_err(|u| match u {
                Unresolved::Package if unquoted => NotFound::PackageUnquoted(package.to_string()),
                Unresolved::Package => NotFound::Package(package.to_string()),
                Unresolved::Channel => NotFound::Channel(package.to_string(), channel.to_string()),
            }))
    }

    /// GetBundle: a bundle as a member of a channel, trimmed (no replaces or skips).
    pub fn bundle(&self, package: &str, channel: &str, name: &str) -> Answer<EncodedBundle> {
        if let Err(e) = self.channel(package, channel, false)? {
            return Ok(Err(e));
        }
        self.entry_bundle(package, channel, name)
    }

    /// GetBundleForChannel: the channel's head, trimmed. The channel is looked up once, for
    /// its existence and its head.
    pub fn bundle_for_channel(&self, package: &str, channel: &str) -> Answer<EncodedBundle> {
        let head = match self.channel(package, channel, false)? {
            Ok(c) => c.head(),
            Err(e) => return Ok(Err(e)),
        };
        self.entry_bundle(package, channel, &head)
    }

    /// A channel entry's bundle, trimmed, for a caller that has checked the channel.
    fn entry_bundle(&self, package: &str, channel: &str, name: &str) -> Answer<EncodedBundle> {
        static SQL: OnceLock<String> = OnceLock::new();
        let sql = SQL.get_or_init(|| {
            format!(
                "{} WHERE e.package = ?1 AND e.channel = ?2 AND e.bundle = ?3",
                bundle_select("1")
            )
        });
        Ok(self
            .one_bundle(sql, [package, channel, name], true)?
            .ok_or_else(|| NotFound::Bundle(package.into(), channel.into(), name.into())))
    }

    /// GetBundleThatReplaces: of the entries of a channel that replace or skip `name`, the
    /// one closest to the head (then by name), trimmed. Which one was decided at ingest
    /// (`replacement`, see `store::answers`); it is looked up and read by one statement.
    pub fn bundle_that_replaces(
        &self,
        name: &str,
        package: &str,
        channel: &str,
    ) -> Answer<EncodedBundle> {
        if let Err(e) = self.channel(package, channel, true)? {
            return Ok(Err(e));
        }
        static SQL: OnceLock<String> = OnceLock::new();
        let sql = SQL.get_or_init(|| {
            format!(
                "{} WHERE e.package = ?1 AND e.channel = ?2 AND e.bundle = (
                     SELECT replacing FROM replacement
                     WHERE package = ?1 AND channel = ?2 AND replaced = ?3)",
                bundle_select("1")
            )
        });
        Ok(self
            .one_bundle(sql, [package, channel, name], true)?
            .ok_or_else(|| NotFound::NoReplacement(package.into(), channel.into())))
    }

    /// GetChannelEntriesThatReplace: every entry in any package that replaces or skips
    /// `name`, with the entry's own replaces.
    pub fn entries_that_replace(&self, name: &str) -> Answer<Vec<api::ChannelEntry>> {
        let c = self.conn()?;
        let mut st = c.prepare_cached(
            "SELECT e.package, e.channel, e.bundle, e.replaces FROM edge g
             JOIN channel_entry e ON e.package = g.package AND e.channel = g.channel AND e.bundle = g.from_bundle
             WHERE g.to_bundle = ?1 AND g.kind IN ('replaces', 'skips')
             GROUP BY e.package, e.channel, e.bundle ORDER BY e.package, e.channel, e.bundle",
        )?;
        let v: Vec<_> = st
            .query_map([name], |r| {
                Ok(api::ChannelEntry {
                    package_name: r.get(0)?,
                    channel_name: r.get(1)?,
                    bundle_name: r.get(2)?,
                    replaces: r.get(3)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(non_empty(v, || NotFound::NoReplacingEntries(name.into())))
    }

    /// GetChannelEntriesThatProvide: every entry whose bundle provides the exact
    /// group/version/kind, once with its replaces and once per other skip.
    pub fn entries_that_provide(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Answer<Vec<api::ChannelEntry>> {
        let mut out = Vec::new();
        for r in self.providing_entries(group, version, kind)? {
            expand_skips(r, |_| true, &mut out);
        }
        Ok(non_empty(out, || no_provider(group, version, kind)))
    }

    /// GetLatestChannelEntriesThatProvide: FBC's "latest" rule, the channel heads that
    /// provide the API, with those of their skips that are entries of the same channel.
    pub fn latest_entries_that_provide(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Answer<Vec<api::ChannelEntry>> {
        let heads = self.providing_entries(group, version, kind)?;
        let c = self.conn()?;
        let mut in_channel = c.prepare_cached(
            "SELECT 1 FROM channel_entry WHERE package = ?1 AND channel = ?2 AND bundle = ?3",
        )?;
        let mut out = Vec::new();
        for r in heads.into_iter().filter(|r| r.position == 0) {
            let mut kept = std::collections::HashSet::new();
            for s in &r.skips {
                let e = &r.entry;
                let hit: Option<i64> = in_channel
                    .query_row([&e.package_name, &e.channel_name, s], |r| r.get(0))
                    .optional()?;
                if hit.is_some() {
                    kept.insert(s.clone());
                }
            }
            expand_skips(r, |s| kept.contains(s), &mut out);
        }
        Ok(non_empty(out, || no_provider(group, version, kind)))
    }

    /// Entries whose bundle provides the exact group/version/kind.
    fn providing_entries(&self, group: &str, version: &str, kind: &str) -> Result<Vec<EntryRow>> {
        let c = self.conn()?;
        let mut st = c.prepare_cached(
            "SELECT e.package, e.channel, e.bundle, e.replaces, e.skips, e.position
             FROM provided_api a JOIN bundle b ON b.id = a.bundle_id
             JOIN channel_entry e ON e.package = b.package AND e.bundle = b.name
             WHERE a.api_group = ?1 AND a.version = ?2 AND a.kind = ?3
             ORDER BY e.package, e.channel, e.bundle",
        )?;
        let v = st
            .query_map([group, version, kind], |r| {
                Ok(EntryRow {
                    entry: api::ChannelEntry {
                        package_name: r.get(0)?,
                        channel_name: r.get(1)?,
                        bundle_name: r.get(2)?,
                        replaces: r.get(3)?,
                    },
                    skips: r.get::<_, Skips>(4)?.0,
                    position: r.get(5)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(v)
    }

    /// GetDefaultBundleThatProvides: the answer decided at ingest (`default_provider`, see
    /// `store::build`), trimmed as GetBundle's.
    pub fn default_bundle_that_provides(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Answer<EncodedBundle> {
        // The answer, found and read by one statement; only when there is none is the
        // table asked again, for which error it is.
        static SQL: OnceLock<String> = OnceLock::new();
        let sql = SQL.get_or_init(|| {
            format!(
                "{} WHERE (e.package, e.channel, e.bundle) = (
                     SELECT package, channel, bundle FROM default_provider
                     WHERE api_group = ?1 AND version = ?2 AND kind = ?3)",
                bundle_select("1")
            )
        });
        if let Some(answer) = self.one_bundle(sql, [group, version, kind], true)? {
            return Ok(Ok(answer));
        }
        type Head = (Option<String>, Option<String>, Option<String>);
        let head: Option<Head> = self
            .conn()?
            .prepare_cached(
                "SELECT package, channel, bundle FROM default_provider
                 WHERE api_group = ?1 AND version = ?2 AND kind = ?3",
            )?
            .query_row([group, version, kind], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?;
        match head {
            Some((Some(p), Some(ch), Some(b))) => {
                anyhow::bail!("channel head {p}/{ch}/{b} has no channel entry")
            }
            Some(_) => Ok(Err(NotFound::NoDefaultProvider(
                group.into(),
                version.into(),
                kind.into(),
            ))),
            None => Ok(Err(no_provider(group, version, kind))),
        }
    }

    /// ExperimentalListPackageCustomSchemas: the custom metas of one schema and exactly one
    /// package ("" for metas without a package), as stored.
    pub fn custom_metas(&self, schema: &str, package: &str) -> Result<Vec<String>> {
        let c = self.conn()?;
        let mut st = c.prepare_cached(
            "SELECT blob FROM custom_meta WHERE schema = ?1 AND package = ?2 ORDER BY seq",
        )?;
        let v = st
            .query_map([schema, package], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(v)
    }
}

fn no_provider(group: &str, version: &str, kind: &str) -> NotFound {
    NotFound::NoProvider(group.into(), version.into(), kind.into())
}

fn non_empty<T>(v: Vec<T>, none: impl FnOnce() -> NotFound) -> Result<Vec<T>, NotFound> {
    if v.is_empty() {
        Err(none())
    } else {
        Ok(v)
    }
}

/// The entries the provider questions give for one row: the entry with its own replaces,
/// plus one per skip that differs from it and that `keep` keeps.
fn expand_skips(r: EntryRow, keep: impl Fn(&str) -> bool, out: &mut Vec<api::ChannelEntry>) {
    let at = out.len();
    out.push(r.entry);
    for s in &r.skips {
        if *s != out[at].replaces && keep(s) {
            let entry = api::ChannelEntry {
                replaces: s.clone(),
                ..out[at].clone()
            };
            out.push(entry);
        }
    }
}
