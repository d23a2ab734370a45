//! `opreg list packages|channels|bundles`: what a catalog holds, as an aligned table or JSON.
//!
//! A built opreg database is answered by the store's narrow queries (`store::list`); any other
//! SOURCE (FBC, manifests, legacy index, image) is read and validated, and its rows made by
//! [`crate::inventory::rows_of`]. Both sort the same way, versions as versions.

use crate::inventory::Rows;
use crate::query::Listing;
use clap::{Subcommand, ValueEnum};
use serde::Serialize;
use std::path::PathBuf;

// Help text: the doc comment of `Command::List` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    opreg list packages catalog.db\n  \
    opreg list channels catalog/ strimzi-kafka-operator\n  \
    opreg list bundles catalog.db etcd -o json")]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Subcommand, Debug)]
pub enum What {
    /// Packages: name, display name (from the default channel's head) and default channel.
    /// JSON: [{"name","displayName","defaultChannel"}].
    Packages(Target),
    /// Channels: package, channel and head. JSON: [{"package","name","head"}].
    Channels(Target),
    /// One row per channel entry: package, channel, bundle, version, replaces, skips,
    /// skipRange and image. JSON: [{"package","channel","name","version","replaces","skips",
    /// "skipRange","image"}].
    Bundles(Target),
}

#[derive(clap::Args, Debug)]
pub struct Target {
    /// The catalog: a built opreg database, or anything `opreg ingest` accepts.
    #[arg(value_name = "SOURCE")]
    pub source: PathBuf,
    /// Only this package.
    #[arg(value_name = "PACKAGE")]
    pub package: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    #[command(flatten)]
    pub image: super::ImageArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Packages,
    Channels,
    Bundles,
}

pub fn run(a: Args) -> super::Ended {
    let (kind, t) = match a.what {
        What::Packages(t) => (Kind::Packages, t),
        What::Channels(t) => (Kind::Channels, t),
        What::Bundles(t) => (Kind::Bundles, t),
    };
    let rows = match rows(kind, &t) {
        Ok(r) => r,
        Err(e) => return super::Ended::Failed(e),
    };
    let out = match (kind, t.output) {
        (Kind::Packages, Output::Json) => json(&rows.packages),
        (Kind::Channels, Output::Json) => json(&rows.channels),
        (Kind::Bundles, Output::Json) => json(&rows.bundles),
        (Kind::Packages, Output::Table) => table(
            &["NAME", "DISPLAY NAME", "DEFAULT CHANNEL"],
            rows.packages
                .iter()
                .map(|p| vec![&*p.name, &*p.display_name, &*p.default_channel]),
        ),
        (Kind::Channels, Output::Table) => table(
            &["PACKAGE", "CHANNEL", "HEAD"],
            rows.channels
                .iter()
                .map(|c| vec![&*c.package, &*c.name, &*c.head]),
        ),
        (Kind::Bundles, Output::Table) => {
            let skips: Vec<String> = rows.bundles.iter().map(|b| b.skips.join(",")).collect();
            table(
                &[
                    "PACKAGE",
                    "CHANNEL",
                    "BUNDLE",
                    "VERSION",
                    "REPLACES",
                    "SKIPS",
                    "SKIP RANGE",
                    "IMAGE",
                ],
                rows.bundles.iter().zip(&skips).map(|(b, s)| {
                    vec![
                        &*b.package,
                        &*b.channel,
                        &*b.name,
                        &*b.version,
                        &*b.replaces,
                        &**s,
                        &*b.skip_range,
                        &*b.image,
                    ]
                }),
            )
        }
    };
    match super::output::out(&out) {
        Ok(()) => super::Ended::Done,
        Err(e) => super::Ended::Failed(crate::error::Error::failed(format_args!(
            "writing output: {e}"
        ))),
    }
}

fn json<T: Serialize>(rows: &[T]) -> String {
    serde_json::to_string_pretty(rows).map_or_else(|e| format!("{e}\n"), |s| s + "\n")
}

/// An aligned table: columns padded to their widest cell, two spaces apart, no trailing blanks.
pub fn table<'a>(header: &[&'a str], rows: impl Iterator<Item = Vec<&'a str>>) -> String {
    let mut all: Vec<Vec<&str>> = vec![header.to_vec()];
    all.extend(rows);
    let mut width = vec![0usize; header.len()];
    for r in &all {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in &all {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < r.len() {
                let pad = width[i] - cell.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn rows(kind: Kind, t: &Target) -> crate::error::Result<Rows> {
    let what = match kind {
        Kind::Packages => Listing::Packages,
        Kind::Channels => Listing::Channels,
        Kind::Bundles => Listing::Bundles,
    };
    crate::query::list(&t.source, what, t.package.as_deref(), &t.image.options())
}
