//! What a catalog holds, as rows for people and scripts (`opreg list`): packages with their
//! display name and default channel, channels with their head, and channel entries with their
//! declared edges and image.
//!
//! The rows are made here from the in-memory [`Catalog`] ([`rows_of`]) and by
//! `store::list` from a built database's tables, without loading the whole catalog; both sort
//! them with [`sort_bundles`] and take display names from [`display_name`], so the two agree.

use crate::graph::{channel_head, Head};
use crate::model::{prop, Bundle, Catalog};
use crate::version::blang;
use serde::Serialize;
use std::cmp::Ordering;

/// One package: `{"name","displayName","defaultChannel"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRow {
    pub name: String,
    pub display_name: String,
    pub default_channel: String,
}

/// One channel: `{"package","name","head"}` ("" when the channel has no unique head).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChannelRow {
    pub package: String,
    pub name: String,
    pub head: String,
}

/// One channel entry:
/// `{"package","channel","name","version","replaces","skips","skipRange","image"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleRow {
    pub package: String,
    pub channel: String,
    pub name: String,
    pub version: String,
    pub replaces: String,
    pub skips: Vec<String>,
    pub skip_range: String,
    pub image: String,
}

/// Everything `opreg list` shows, for every package or one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rows {
    pub packages: Vec<PackageRow>,
    pub channels: Vec<ChannelRow>,
    pub bundles: Vec<BundleRow>,
}

/// The display name a bundle declares: `displayName` of its `olm.csv.metadata`, else the
/// `spec.displayName` of the ClusterServiceVersion among its `olm.bundle.object`s; "" if none.
pub fn display_name(b: &Bundle) -> String {
    let field = |v: &serde_json::Value| {
        v.get("displayName")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    for p in b.properties_of(prop::CSV_METADATA) {
        if let Some(n) = serde_json::from_str(&p.value).ok().as_ref().and_then(field) {
            return n;
        }
    }
    for p in b.properties_of(prop::BUNDLE_OBJECT) {
        let Some((kind, json)) = crate::model::decode_bundle_object(&p.value) else {
            continue;
        };
        if kind != "ClusterServiceVersion" {
            continue;
        }
        let csv: Option<serde_json::Value> = serde_json::from_str(&json).ok();
        if let Some(n) = csv.as_ref().and_then(|c| c.get("spec")).and_then(field) {
            return n;
        }
    }
    String::new()
}

/// Versions as versions (6.1.2 before 6.1.10); text that is not a version after every
/// version, in text order.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    match (blang::parse_version(a), blang::parse_version(b)) {
        (Ok(x), Ok(y)) => x.cmp_precedence(&y).then_with(|| a.cmp(b)),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

/// Sorts channel entries by package, channel, then version (as a version), then name.
pub fn sort_bundles(rows: &mut [BundleRow]) {
    rows.sort_by(|x, y| {
        (&x.package, &x.channel)
            .cmp(&(&y.package, &y.channel))
            .then_with(|| compare_versions(&x.version, &y.version))
            .then_with(|| x.name.cmp(&y.name))
    });
}

/// The rows of `cat`, for every package or only `package` (which the caller checked exists).
pub fn rows_of(cat: &Catalog, package: Option<&str>) -> Rows {
    let mut rows = Rows::default();
    for pkg in cat.packages.values() {
        if package.is_some_and(|p| p != pkg.name) {
            continue;
        }
        let head_of = |c: &str| match pkg.channels.get(c).map(channel_head) {
            Some(Head::One(h)) => h.to_string(),
            _ => String::new(),
        };
        let default_head = head_of(&pkg.default_channel);
        rows.packages.push(PackageRow {
            name: pkg.name.clone(),
            display_name: pkg
                .bundles
                .get(&default_head)
                .map(display_name)
                .unwrap_or_default(),
            default_channel: pkg.default_channel.clone(),
        });
        for ch in pkg.channels.values() {
            rows.channels.push(ChannelRow {
                package: pkg.name.clone(),
                name: ch.name.clone(),
                head: head_of(&ch.name),
            });
            for e in &ch.entries {
                let b = pkg.bundles.get(&e.name);
                rows.bundles.push(BundleRow {
                    package: pkg.name.clone(),
                    channel: ch.name.clone(),
                    name: e.name.clone(),
                    version: b.map(Bundle::version).unwrap_or_default(),
                    replaces: e.replaces.clone(),
                    skips: e.skips.clone(),
                    skip_range: e.skip_range.clone(),
                    image: b.map(|b| b.image.clone()).unwrap_or_default(),
                });
            }
        }
    }
    sort_bundles(&mut rows.bundles);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_as_versions() {
        let mut v = vec!["6.1.10", "not-a-version", "6.1.2", "6.1.2-rc.1", "10.0.0"];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            ["6.1.2-rc.1", "6.1.2", "6.1.10", "10.0.0", "not-a-version"]
        );
    }
}
