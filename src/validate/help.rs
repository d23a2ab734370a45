//! The `help:` line of each update-graph error: what to change, and in which file.
//!
//! Bundles read from bundle directories name their CSV (where `replaces` and `skips` live) and
//! take the default channel from `metadata/annotations.yaml` beside `manifests/`; FBC and
//! package manifests name the file that declared the package or bundle.

use crate::graph::{replaces_walk, Versions};
use crate::model::{Channel, Package};
use std::path::Path;

pub(super) fn file_of(pkg: &Package, bundle: &str) -> String {
    pkg.bundles
        .get(bundle)
        .map_or_else(|| pkg.origin.file.clone(), |b| b.origin.file.clone())
}

fn with_version(versions: &Versions, name: &str) -> String {
    match versions.get(name) {
        Some(v) => format!("{name} ({v})"),
        None => name.to_string(),
    }
}

/// Where the default channel is set, and the channels to choose from.
pub fn default_channel(pkg: &Package) -> String {
    let channels: Vec<&str> = pkg.channels.keys().map(String::as_str).collect();
    let choose = format!("one of its channels: {}", channels.join(", "));
    let origin = Path::new(&pkg.origin.file);
    let bundle_dir = origin
        .parent()
        .filter(|d| d.file_name().is_some_and(|n| n == "manifests"))
        .and_then(Path::parent);
    match bundle_dir {
        Some(dir) => format!(
            "set operators.operatorframework.io.bundle.channel.default.v1 in {} to {choose}",
            dir.join("metadata/annotations.yaml").display()
        ),
        None => format!("set defaultChannel in {} to {choose}", pkg.origin.file),
    }
}

/// The competing heads in version order, and which one to make replace or skip the others.
pub fn heads(pkg: &Package, heads: &[&str]) -> String {
    let versions = Versions::of(pkg);
    let mut sorted: Vec<&str> = heads.to_vec();
    sorted.sort_by(|a, b| match (versions.get(a), versions.get(b)) {
        (Some(x), Some(y)) => x.cmp_precedence(y),
        _ => a.cmp(b),
    });
    let Some((newest, older)) = sorted.split_last() else {
        return String::new();
    };
    format!(
        "heads in version order: {}; keep one head: have {newest} (in {}) replace or skip {}",
        sorted
            .iter()
            .map(|h| with_version(&versions, h))
            .collect::<Vec<_>>()
            .join(", "),
        file_of(pkg, newest),
        older.join(", ")
    )
}

/// For each stranded bundle, the chain bundle just above it in version, which should skip or
/// replace it.
pub fn stranded(pkg: &Package, ch: &Channel, head: &str, stranded: &[String]) -> String {
    let versions = Versions::of(pkg);
    let chain = replaces_walk(ch, head).chain;
    let fixes: Vec<String> = stranded
        .iter()
        .map(|s| {
            let above = versions.get(s).and_then(|sv| {
                chain
                    .iter()
                    .filter_map(|c| versions.get(c).map(|v| (c, v)))
                    .filter(|(_, v)| v.cmp_precedence(sv).is_gt())
                    .min_by(|a, b| a.1.cmp_precedence(b.1))
                    .map(|(c, _)| c.as_str())
            });
            let target = above.unwrap_or(head);
            format!(
                "add {s} to the skips (or replaces) of {target} (in {})",
                file_of(pkg, target)
            )
        })
        .collect();
    fixes.join("; ")
}

/// The replaces that closes the loop.
pub fn cycle(pkg: &Package, cycle: &[String]) -> String {
    match cycle {
        [.., last, again] => format!(
            "remove or change the replaces of {last} (in {}), which points back to {again}",
            file_of(pkg, last)
        ),
        _ => String::new(),
    }
}
