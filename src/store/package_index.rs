//! The package index: every package with its default channel, deprecation and channels (name,
//! head, deprecation), read once per store and kept in memory, so that GetPackage and the
//! channel checks of the bundle RPCs never touch SQLite. The catalog is immutable, so the
//! index never changes.
//!
//! Why not SQLite: the package table's rows end with the package's description and icon, tens
//! of KB on overflow pages, and SQLite reads a whole overflowing row for every key comparison
//! of a lookup by name.
//!
//! Why compact: the index grows with the catalog and stays for the server's lifetime. Every
//! string sits in one text buffer and the records hold offsets into it, so the index costs
//! its text plus 24 bytes per package and 16 per channel. A map of owned strings cost
//! far more: serving the 64× synthetic catalog (4,096 packages, 8,347 channels), the server
//! held 1.9–2.3 MB more anonymous memory at idle than with this index. Strings that recur
//! (channel names, default channels, heads shared by a package's channels, deprecation
//! messages) are in the text once, and a head that starts with its package's name keeps only
//! what follows it (see [`PREFIXED`]): on that catalog, 116 KB of text instead of 473 KB.

use crate::api;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::ops::Range;

/// A string of [`PackageIndex::text`]: start and length.
#[derive(Clone, Copy)]
struct Span(u32, u32);

struct PackageFacts {
    name: Span,
    default_channel: Span,
    /// This package's channels in [`PackageIndex::channels`], sorted by name.
    channels: Range<u32>,
}

struct ChannelFacts {
    name: Span,
    /// The head's name, or (with [`PREFIXED`] set in its length) what follows the package's
    /// name in it.
    head: Span,
}

/// Set in a head's span length: the head is the package's name followed by the span's text.
/// Most heads are `PACKAGE.vVERSION`, so the text holds `.vVERSION` once for every package
/// that has that version, not every head in full: on the 64× synthetic catalog, 116 KB of
/// text instead of 303 KB.
const PREFIXED: u32 = 1 << 31;

/// Which part of a (package, channel) address is not in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolved {
    Package,
    Channel,
}

pub struct PackageIndex {
    text: Box<str>,
    /// Sorted by name.
    packages: Box<[PackageFacts]>,
    channels: Box<[ChannelFacts]>,
    /// Deprecation messages by position in `packages` and in `channels`, sorted by it. Few
    /// packages and channels have one, so they are not a field of every record (which made a
    /// package 36 bytes and a channel 28, against 24 and 16).
    package_deprecations: Box<[(u32, Span)]>,
    channel_deprecations: Box<[(u32, Span)]>,
}

/// One package of the index: its position in [`PackageIndex::packages`].
#[derive(Clone, Copy)]
pub struct PackageRef<'a> {
    ix: &'a PackageIndex,
    at: u32,
}

/// One channel of the index: its position in [`PackageIndex::channels`], and its package's in
/// [`PackageIndex::packages`].
#[derive(Clone, Copy)]
pub struct ChannelRef<'a> {
    ix: &'a PackageIndex,
    at: u32,
    package: u32,
}

/// The text buffer while the index is read, and where each recurring string already is.
#[derive(Default)]
struct Text {
    buf: String,
    shared: HashMap<Box<str>, Span>,
}

impl Text {
    fn push(&mut self, s: &str) -> Result<Span> {
        let start = self.buf.len();
        // Where the span ends is under 2^31, so its start and length are too, and a length
        // leaves the bit [`PREFIXED`] free.
        if start + s.len() >= PREFIXED as usize {
            anyhow::bail!("the package index is over 2 GiB");
        }
        self.buf.push_str(s);
        Ok(Span(start as u32, s.len() as u32))
    }

    /// [`Text::push`] for a string that may recur: stored the first time, found after that.
    fn push_shared(&mut self, s: &str) -> Result<Span> {
        if let Some(&span) = self.shared.get(s) {
            return Ok(span);
        }
        let span = self.push(s)?;
        self.shared.insert(s.into(), span);
        Ok(span)
    }
}

impl PackageIndex {
    pub(super) fn load(c: &rusqlite::Connection) -> Result<PackageIndex> {
        let mut text = Text::default();
        let mut packages = Vec::new();
        // A scan reads only the leading columns, which sit on the rows' first pages.
        let mut st = c.prepare("SELECT name, default_channel FROM package ORDER BY name")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            packages.push(PackageFacts {
                name: text.push(r.get_ref(0)?.as_str()?)?,
                default_channel: text.push_shared(r.get_ref(1)?.as_str()?)?,
                channels: 0..0,
            });
        }
        // The package's own deprecation: its olm.package entry (what ingest stores in
        // package.deprecation, the row's last column); the lowest seq wins.
        let mut st = c.prepare(
            "SELECT package, message FROM deprecation_entry
             WHERE schema = 'olm.package' AND name = '' ORDER BY package, seq",
        )?;
        let mut rows = st.query([])?;
        let mut package_deprecations: Vec<(u32, Span)> = Vec::new();
        while let Some(r) = rows.next()? {
            if let Some(i) = position(&text.buf, &packages, r.get_ref(0)?.as_str()?) {
                // Rows come by package, so the package's first is the last pushed.
                let i = i as u32;
                if package_deprecations.last().is_none_or(|&(at, _)| at != i) {
                    let message = text.push_shared(r.get_ref(1)?.as_str()?)?;
                    package_deprecations.push((i, message));
                }
            }
        }
        // Grouped by package, so each package's channels are one run.
        let mut channels = Vec::new();
        let mut channel_deprecations = Vec::new();
        let mut st = c.prepare(
            "SELECT package, name, head, deprecation FROM channel ORDER BY package, name",
        )?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let Some(i) = position(&text.buf, &packages, r.get_ref(0)?.as_str()?) else {
                continue;
            };
            let at = u32::try_from(channels.len()).context("too many channels")?;
            let p = &mut packages[i];
            if p.channels.is_empty() {
                p.channels = at..at;
            }
            p.channels.end = at + 1;
            let head = r.get_ref(2)?.as_str()?;
            let suffix = head
                .strip_prefix(span_str(&text.buf, p.name))
                .filter(|s| !s.is_empty());
            let head = match suffix {
                Some(s) => {
                    let Span(start, len) = text.push_shared(s)?;
                    Span(start, len | PREFIXED)
                }
                None => text.push_shared(head)?,
            };
            channels.push(ChannelFacts {
                name: text.push_shared(r.get_ref(1)?.as_str()?)?,
                head,
            });
            if let Some(m) = r.get_ref(3)?.as_str_or_null()? {
                channel_deprecations.push((at, text.push_shared(m)?));
            }
        }
        Ok(PackageIndex {
            text: text.buf.into_boxed_str(),
            packages: packages.into_boxed_slice(),
            channels: channels.into_boxed_slice(),
            package_deprecations: package_deprecations.into_boxed_slice(),
            channel_deprecations: channel_deprecations.into_boxed_slice(),
        })
    }

    fn str(&self, s: Span) -> &str {
        span_str(&self.text, s)
    }

    /// Every package name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.packages.iter().map(|p| self.str(p.name))
    }

    pub fn package(&self, name: &str) -> Option<PackageRef<'_>> {
        position(&self.text, &self.packages, name).map(|i| PackageRef {
            ix: self,
            at: i as u32,
        })
    }

    pub fn channel(&self, package: &str, channel: &str) -> Result<ChannelRef<'_>, Unresolved> {
        let p = self.package(package).ok_or(Unresolved::Package)?;
        let run = p.facts().channels.clone();
        self.channels[run.start as usize..run.end as usize]
            .binary_search_by(|c| self.str(c.name).cmp(channel))
            .map(|i| ChannelRef {
                ix: self,
                at: run.start + i as u32,
                package: p.at,
            })
            .map_err(|_| Unresolved::Channel)
    }
}

/// Where the package `name` is in `packages` (sorted by name, their names in `text`).
fn position(text: &str, packages: &[PackageFacts], name: &str) -> Option<usize> {
    packages
        .binary_search_by(|p| span_str(text, p.name).cmp(name))
        .ok()
}

fn span_str(text: &str, s: Span) -> &str {
    &text[s.0 as usize..(s.0 + s.1) as usize]
}

impl<'a> PackageRef<'a> {
    fn facts(&self) -> &'a PackageFacts {
        &self.ix.packages[self.at as usize]
    }
    pub fn name(&self) -> &'a str {
        self.ix.str(self.facts().name)
    }
    pub fn default_channel(&self) -> &'a str {
        self.ix.str(self.facts().default_channel)
    }
    /// Sorted by name.
    pub fn channels(&self) -> impl Iterator<Item = ChannelRef<'a>> + 'a {
        let (ix, package) = (self.ix, self.at);
        self.facts()
            .channels
            .clone()
            .map(move |at| ChannelRef { ix, at, package })
    }
    /// GetPackage's answer.
    pub fn to_api(&self) -> api::Package {
        api::Package {
            name: self.name().to_string(),
            channels: self.channels().map(|c| c.to_api()).collect(),
            default_channel_name: self.default_channel().to_string(),
            deprecation: deprecation(self.ix, &self.ix.package_deprecations, self.at),
        }
    }
}

impl<'a> ChannelRef<'a> {
    fn facts(&self) -> &'a ChannelFacts {
        &self.ix.channels[self.at as usize]
    }
    pub fn name(&self) -> &'a str {
        self.ix.str(self.facts().name)
    }
    /// The channel head's bundle name.
    pub fn head(&self) -> String {
        let Span(start, len) = self.facts().head;
        let text = self.ix.str(Span(start, len & !PREFIXED));
        if len & PREFIXED == 0 {
            return text.to_string();
        }
        let package = self.ix.str(self.ix.packages[self.package as usize].name);
        [package, text].concat()
    }
    pub fn to_api(&self) -> api::Channel {
        api::Channel {
            name: self.name().to_string(),
            csv_name: self.head(),
            deprecation: deprecation(self.ix, &self.ix.channel_deprecations, self.at),
        }
    }
}

/// The deprecation of the record at `at`, from one of the index's sorted lists.
fn deprecation(ix: &PackageIndex, list: &[(u32, Span)], at: u32) -> Option<api::Deprecation> {
    let i = list.binary_search_by_key(&at, |&(k, _)| k).ok()?;
    Some(api::Deprecation {
        message: ix.str(list[i].1).to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two packages whose channels share names and heads: each recurring string is in the
    /// text once, and every lookup still finds its own, deprecations included (a package's
    /// first by seq).
    #[test]
    fn recurring_strings_are_kept_once() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE package (name TEXT, default_channel TEXT);
             CREATE TABLE deprecation_entry (package TEXT, schema TEXT, name TEXT, seq INT, message TEXT);
             CREATE TABLE channel (package TEXT, name TEXT, head TEXT, deprecation TEXT);
             INSERT INTO package VALUES ('a', 'stable'), ('b', 'stable'), ('c', 'stable');
             INSERT INTO deprecation_entry VALUES ('b', 'olm.package', '', 2, 'later'),
                                                  ('b', 'olm.package', '', 1, 'old'),
                                                  ('b', 'olm.channel', 'fast', 1, 'no');
             INSERT INTO channel VALUES ('a', 'stable', 'a.v2', 'gone'), ('a', 'fast', 'a.v2', NULL),
                                        ('b', 'stable', 'b.v1', 'gone'), ('b', 'fast', 'b.v3', NULL),
                                        ('c', 'stable', 'legacy-c.v1', NULL);",
        )
        .unwrap();
        let ix = PackageIndex::load(&c).unwrap();
        // Each string once; heads after their package's name as what follows it (.v2, .v3,
        // .v1), the head that does not start with it in full.
        assert_eq!(&*ix.text, "astablebcold.v2fastgone.v3.v1legacy-c.v1");
        let head = |p, ch| ix.channel(p, ch).ok().map(|c| c.head());
        assert_eq!(head("a", "stable").as_deref(), Some("a.v2"));
        assert_eq!(head("a", "fast").as_deref(), Some("a.v2"));
        assert_eq!(head("b", "stable").as_deref(), Some("b.v1"));
        assert_eq!(head("b", "fast").as_deref(), Some("b.v3"));
        assert_eq!(head("c", "stable").as_deref(), Some("legacy-c.v1"));
        let c = ix.package("c").unwrap().to_api();
        assert_eq!(c.channels[0].csv_name, "legacy-c.v1");
        let b = ix.package("b").unwrap().to_api();
        assert_eq!(b.default_channel_name, "stable");
        let names: Vec<_> = b.channels.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["fast", "stable"]);
        assert_eq!(b.channels[1].deprecation.as_ref().unwrap().message, "gone");
        assert!(b.channels[0].deprecation.is_none());
        assert_eq!(b.deprecation.unwrap().message, "old");
        let a = ix.package("a").unwrap().to_api();
        assert!(a.deprecation.is_none());
        assert_eq!(a.channels[1].deprecation.as_ref().unwrap().message, "gone");
        assert!(a.channels[0].deprecation.is_none());
    }
}
