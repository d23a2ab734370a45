//! `opreg upgrade`: where an installed version upgrades to, and why.
//!
//! Turns the flags into a request for [`crate::query::upgrade`] (which asks a built database
//! through the store and loads anything else) and prints the answer as text or JSON.

use crate::error::Error;
use crate::graph::resolve::{self, Resolution, Step};
use crate::query::Catalogs;
use clap::builder::PossibleValuesParser;
use std::path::PathBuf;

// Help text: the doc comment of `Command::Upgrade` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    opreg upgrade --demo -p example --from example.v1.0.0@1.0.0 --semantics v1\n  \
    opreg upgrade catalog.db -p etcd --from etcdoperator.v0.9.0 --channel alpha -o json")]
pub struct Args {
    /// Catalog sources: a built opreg database, or anything `opreg ingest` accepts.
    #[arg(value_name = "SOURCE", required_unless_present = "demo")]
    pub sources: Vec<PathBuf>,
    /// Resolve in the embedded demo catalog instead of SOURCE.
    #[arg(long, conflicts_with = "sources")]
    pub demo: bool,
    /// Package to resolve in.
    #[arg(short, long)]
    pub package: String,
    /// The installed bundle: a bundle name, a version of the package, or NAME@VERSION for an
    /// installed bundle that is not in the catalog.
    #[arg(long, value_name = "FROM")]
    pub from: String,
    /// Channel (classic: at most one, default channel when absent; v1/semver: repeatable,
    /// all channels when absent).
    #[arg(long = "channel", value_name = "CHANNEL")]
    pub channels: Vec<String>,
    /// OLM v1 version constraint (Masterminds syntax, e.g. "~1.2 || ~1.3"); v1/semver only.
    #[arg(long = "version", value_name = "RANGE")]
    pub version_range: Option<String>,
    /// OLM v1 upgradeConstraintPolicy.
    #[arg(long, default_value = "CatalogProvided",
          value_parser = PossibleValuesParser::new(["CatalogProvided", "SelfCertified"]))]
    pub policy: String,
    /// Which OLM's rules to apply.
    #[arg(long, default_value = "classic",
          value_parser = PossibleValuesParser::new(["classic", "v1", "semver"]))]
    pub semantics: String,
    /// Output format.
    #[arg(short, long, default_value = "text",
          value_parser = PossibleValuesParser::new(["text", "json"]))]
    pub output: String,
    /// OpenShift cluster version 4.Y: mark path bundles whose olm.maxOpenShiftVersion blocks
    /// upgrading the cluster beyond it.
    #[arg(long, value_name = "4.Y")]
    pub openshift_version: Option<String>,
    #[command(flatten)]
    pub image: super::ImageArgs,
}

pub fn run(a: Args) -> super::Ended {
    match answer(&a) {
        Ok((res, note)) => {
            if let Some(n) = note {
                super::output::warning(n);
            }
            let printed = if a.output == "json" {
                serde_json::to_string_pretty(&res)
                    .map_err(std::io::Error::other)
                    .and_then(|s| super::output::out(&(s + "\n")))
            } else {
                super::output::out(&text(&res))
            };
            match printed {
                Ok(()) => super::Ended::Done,
                Err(e) => super::Ended::Failed(Error::failed(format_args!("writing output: {e}"))),
            }
        }
        Err(e) => super::Ended::Failed(e),
    }
}

/// The resolution and, under classic rules, a note on the channel it ran in.
fn answer(a: &Args) -> crate::error::Result<(Resolution, Option<String>)> {
    let parsed = a.policy.parse().and_then(|p| Ok((p, a.semantics.parse()?)));
    let (policy, semantics) = parsed.map_err(crate::query::resolve_error)?;
    let req = resolve::Request {
        package: a.package.clone(),
        from: a.from.clone(),
        channels: a.channels.clone(),
        version_range: a.version_range.clone().filter(|r| !r.trim().is_empty()),
        policy,
        semantics,
        openshift_version: a.openshift_version.clone().filter(|v| !v.trim().is_empty()),
    };
    let catalogs = if a.demo {
        Catalogs::Demo
    } else {
        Catalogs::Sources(a.sources.clone())
    };
    crate::query::upgrade(&catalogs, &req, &a.image.options())
}

fn hop(s: &Step) -> String {
    let mut line = format!(
        "{} -> {} ({}) in channel {} via {}",
        s.from, s.name, s.version, s.channel, s.edge
    );
    if s.downgrade {
        line += " DOWNGRADE (an older bundle's skipRange covers the installed version)";
    }
    if !s.max_openshift_version.is_empty() {
        line += &format!(" [maxOpenShiftVersion {}]", s.max_openshift_version);
    }
    if s.blocks_openshift_upgrade {
        line += &format!("\n     BLOCKS the cluster upgrade: {}", s.openshift_note);
    }
    line
}

/// The human-readable report.
pub fn text(r: &Resolution) -> String {
    let i = &r.installed;
    let mut out = format!(
        "package {} ({} rules), installed {} ({}){}\n",
        r.package,
        r.semantics,
        i.name,
        i.version,
        if i.in_catalog {
            ""
        } else {
            ", not in the catalog"
        }
    );
    match &r.next {
        Some(n) => {
            out += &format!(
                "next: {} ({}) in channel {} via {}\npath:\n",
                n.name, n.version, n.channel, n.edge
            );
            for (k, s) in r.path.iter().enumerate() {
                out += &format!("  {}. {}\n", k + 1, hop(s));
            }
        }
        None => out += "next: none (no upgrade)\n",
    }
    let last = r.path.last().map(|s| s.name.as_str()).unwrap_or(&i.name);
    if let Some(e) = &r.error {
        out += &format!("error: {e}\n");
    }
    if !r.rejected.is_empty() {
        out += &format!("not taken from {last}:\n");
        for x in &r.rejected {
            out += &format!("  {} ({}): {}: {}\n", x.name, x.version, x.reason, x.detail);
        }
    }
    out
}
