//! `opreg diff OLD NEW`: what changed between two catalogs, and the CI gate: exit 1 when a
//! version someone may have installed from OLD has no upgrade path in NEW. The comparison is
//! [`crate::diff`]; this file reads the two SOURCEs and prints the report.

use crate::diff::removal::{Removal, Removed};
use crate::diff::{Report, Stranded};
use crate::graph::resolve::Semantics;
use clap::ValueEnum;
use std::fmt::Write;
use std::path::PathBuf;

// Help text: the doc comment of `Command::Diff` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    opreg diff old.db new-catalog/\n  \
    opreg diff quay.io/org/index:v1 catalog/ -o json --semantics v1")]
pub struct Args {
    /// The catalog as it is (what subscribers may have installed): any SOURCE.
    #[arg(value_name = "OLD")]
    pub old: PathBuf,
    /// The catalog as it will be: any SOURCE.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Whose upgrade rules decide stranding: classic OLM or OLM v1.
    #[arg(long, value_enum, default_value_t = SemanticsArg::Classic)]
    pub semantics: SemanticsArg,
    /// Fail (exit 1) when NEW removes a channel or a channel entry of OLD, outside the channels
    /// --allow-removal matches. A package missing from NEW removes each of its channels. What a
    /// removal it allows leaves behind is not reported as stranded.
    #[arg(long)]
    pub fail_on_removal: bool,
    /// Channels whose removals pass --fail-on-removal: a regular expression matched anywhere in
    /// the channel's name (unanchored).
    #[arg(long, value_name = "REGEX", default_value = crate::diff::removal::DEFAULT_ALLOW)]
    pub allow_removal: String,
    /// NEW holds only some packages (a fragment): only the packages NEW has are compared, so a
    /// package missing from NEW is neither stranded nor removed.
    #[arg(long)]
    pub fragment: bool,
    #[command(flatten)]
    pub image: super::ImageArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SemanticsArg {
    Classic,
    V1,
}

pub fn run(a: Args) -> super::Ended {
    let semantics = match a.semantics {
        SemanticsArg::Classic => Semantics::Classic,
        SemanticsArg::V1 => Semantics::V1,
    };
    let opts = match crate::diff::removal::allow_pattern(&a.allow_removal) {
        Ok(allow_removal) => crate::diff::Options {
            semantics,
            fragment: a.fragment,
            allow_removal,
            removal_gate: a.fail_on_removal,
        },
        Err(e) => return e.into(),
    };
    let loaded = crate::load::sources(
        std::slice::from_ref(&a.old),
        &a.image.options(),
        &Default::default(),
    )
    .and_then(|o| {
        Ok((
            o,
            crate::load::sources(
                std::slice::from_ref(&a.new),
                &a.image.options(),
                &Default::default(),
            )?,
        ))
    });
    let (old, new) = match loaded {
        Ok(both) => both,
        Err(e) => {
            if a.output == Output::Json {
                let doc = serde_json::json!({
                    "semantics": semantics.to_string(),
                    "error": e.detail(),
                });
                let _ = super::output::out(&format!("{doc:#}\n"));
            }
            return super::Ended::Unreadable(e);
        }
    };
    let report = crate::diff::diff(&old.catalog, &new.catalog, &opts);
    let written = match a.output {
        Output::Json => {
            let doc = Json {
                report: &report,
                error: None,
            };
            match serde_json::to_string_pretty(&doc) {
                Ok(j) => super::output::out(&(j + "\n")),
                Err(e) => Err(std::io::Error::other(e)),
            }
        }
        Output::Text => super::output::out(&text(&report, a.fail_on_removal)),
    };
    if let Err(e) = written {
        return crate::error::Error::failed(format_args!("writing output: {e}")).into();
    }
    let removed = a.fail_on_removal && report.blocking_removals().next().is_some();
    if report.stranded.is_empty() && !removed {
        super::Ended::Done
    } else {
        // The report names every stranded version and every removal.
        super::Ended::Reported
    }
}

/// The JSON report: the comparison, and `error` (null when it ran).
#[derive(serde::Serialize)]
struct Json<'a> {
    #[serde(flatten)]
    report: &'a Report,
    error: Option<String>,
}

/// Items listed per section before "and N more".
const SHOWN: usize = 20;

fn section<T>(out: &mut String, title: &str, items: &[T], line: impl Fn(&T) -> String) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title} ({}):", items.len());
    for i in items.iter().take(SHOWN) {
        let _ = writeln!(out, "  {}", line(i));
    }
    if items.len() > SHOWN {
        let _ = writeln!(
            out,
            "  ... and {} more (-o json lists all)",
            items.len() - SHOWN
        );
    }
}

fn stranded_line(s: &Stranded) -> String {
    format!(
        "{}/{} {} ({}): {}",
        s.package, s.channel, s.bundle, s.version, s.detail
    )
}

fn removal_line(r: &Removal) -> String {
    let what = match r.removed {
        Removed::Package => "package removed".to_string(),
        Removed::Channel => "channel removed".to_string(),
        Removed::Entry => format!("entry {} removed", r.bundle),
    };
    format!("{}/{}: {what}", r.package, r.channel)
}

/// The removal gate's part of the summary: the removals it fails on, then the allowed ones.
fn removal_gate(out: &mut String, r: &Report) {
    let blocking: Vec<&Removal> = r.blocking_removals().collect();
    if blocking.is_empty() {
        let _ = writeln!(
            out,
            "no channel or channel entry removed outside allowed channels"
        );
    } else {
        let _ = writeln!(
            out,
            "REMOVED: {} channel(s) or channel entries removed outside allowed channels",
            blocking.len()
        );
        for x in blocking {
            let _ = writeln!(out, "  {}", removal_line(x));
        }
    }
    let allowed: Vec<&Removal> = r.removals.iter().filter(|x| x.allowed).collect();
    if !allowed.is_empty() {
        let _ = writeln!(out, "removals in allowed channels ({}):", allowed.len());
        for x in allowed {
            let _ = writeln!(out, "  {}", removal_line(x));
        }
    }
}

/// The human summary, stranded versions first, then (with the removal gate on) removals.
pub fn text(r: &Report, removal_gate_on: bool) -> String {
    let mut out = String::new();
    if r.stranded.is_empty() {
        let _ = writeln!(
            out,
            "no installed version is stranded ({} rules)",
            r.semantics
        );
    } else {
        let _ = writeln!(
            out,
            "STRANDED: {} installed version(s) have no upgrade path to their channel head ({} rules)",
            r.stranded.len(),
            r.semantics
        );
        for s in &r.stranded {
            let _ = writeln!(out, "  {}", stranded_line(s));
        }
    }
    if removal_gate_on {
        removal_gate(&mut out, r);
    }
    section(&mut out, "new downgrade hops", &r.new_downgrades, |d| {
        format!(
            "{}/{} {} ({}) skipRange {:?} covers the newer {} ({})",
            d.package, d.channel, d.bundle, d.version, d.skip_range, d.covers, d.covers_version
        )
    });
    section(
        &mut out,
        "default channels changed",
        &r.default_channels,
        |c| format!("{}: {} -> {}", c.package, c.old, c.new),
    );
    section(&mut out, "channel heads changed", &r.heads, |c| {
        format!("{}/{}: {} -> {}", c.package, c.channel, c.old, c.new)
    });
    section(&mut out, "packages added", &r.packages.added, |p| p.clone());
    section(&mut out, "packages removed", &r.packages.removed, |p| {
        p.clone()
    });
    let ch = |c: &crate::diff::ChannelRef| format!("{}/{}", c.package, c.name);
    section(&mut out, "channels added", &r.channels.added, ch);
    section(&mut out, "channels removed", &r.channels.removed, ch);
    let en = |e: &crate::diff::EntryRef| format!("{}/{} {}", e.package, e.channel, e.name);
    section(&mut out, "channel entries added", &r.bundles.added, en);
    section(&mut out, "channel entries removed", &r.bundles.removed, en);
    let ed = |e: &crate::diff::EdgeRef| {
        format!(
            "{}/{} {} -> {} ({})",
            e.package, e.channel, e.from, e.to, e.kind
        )
    };
    section(&mut out, "update edges added", &r.edges.added, ed);
    section(&mut out, "update edges removed", &r.edges.removed, ed);
    out
}
