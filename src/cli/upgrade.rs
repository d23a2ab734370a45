//! `opreg upgrade`: where an installed version upgrades to, and why.
//!
//! Reads the catalog (a built opreg database is queried through the store; any other SOURCE,
//! or `--demo`, is loaded and validated into the model), runs
//! [`crate::graph::resolve::resolve`] and prints the answer as text or JSON.

use crate::graph::resolve::{self, Resolution, Step, UpgradeGraph};
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
    pub image: crate::image::ImageArgs,
}

pub fn run(a: Args) -> i32 {
    let (policy, semantics) = match (a.policy.parse(), a.semantics.parse()) {
        (Ok(p), Ok(s)) => (p, s),
        (Err(e), _) | (_, Err(e)) => return fail(&e),
    };
    let req = resolve::Request {
        package: a.package.clone(),
        from: a.from.clone(),
        channels: a.channels.clone(),
        version_range: a.version_range.clone().filter(|r| !r.trim().is_empty()),
        policy,
        semantics,
        openshift_version: a.openshift_version.clone().filter(|v| !v.trim().is_empty()),
    };
    let resolved = match crate::cli::resolve_or_exit(&a.sources, &a.image, true) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let result = if a.demo {
        match crate::demo::catalog() {
            Ok(cat) => resolve_noting_channels(&*cat, &req).map_err(Into::into),
            Err(d) => {
                d.0.iter().for_each(super::output::diagnostic);
                return super::EXIT_FAILURE;
            }
        }
    } else if let [db] = resolved.paths.as_slice() {
        if crate::store::is_opreg_db(db) {
            // As `opreg list`: narrow queries read a few pages, and SQLite refuses a damaged
            // page when it reads one; a check of every page first (a server's start-up check)
            // took three quarters of the time on the community catalog.
            match crate::store::Store::open_unverified(db) {
                Ok(store) => resolve_noting_channels(&store, &req).map_err(Into::into),
                Err(e) => return fail(&e),
            }
        } else {
            from_sources(&resolved, &req)
        }
    } else {
        from_sources(&resolved, &req)
    };
    let res = match result {
        Ok(r) => r,
        Err(ResolveOrExit::Exit(code)) => return code,
        Err(ResolveOrExit::Error(e)) => return fail(&e),
    };
    let printed = if a.output == "json" {
        match serde_json::to_string_pretty(&res) {
            Ok(s) => super::output::out(&(s + "\n")),
            Err(e) => return fail(&e),
        }
    } else {
        super::output::out(&text(&res))
    };
    match printed {
        Ok(()) => super::EXIT_OK,
        Err(e) => fail(&format_args!("writing output: {e}")),
    }
}

enum ResolveOrExit {
    Error(resolve::ResolveError),
    Exit(i32),
}

impl From<resolve::ResolveError> for ResolveOrExit {
    fn from(e: resolve::ResolveError) -> Self {
        ResolveOrExit::Error(e)
    }
}

fn from_sources(
    resolved: &crate::image::Resolved,
    req: &resolve::Request,
) -> Result<Resolution, ResolveOrExit> {
    let cat = super::load_valid_with(&resolved.paths, resolved, false, true, &mut |b, _| {
        resolved.finish_bundle(b)
    })
    .map_err(ResolveOrExit::Exit)?;
    Ok(resolve_noting_channels(&*cat, req)?)
}

/// [`resolve::resolve`], then, under classic rules, a warning when the installed bundle is not
/// in the channel resolved in: which channels hold it, and the `--channel` to try.
fn resolve_noting_channels(
    g: &dyn UpgradeGraph,
    req: &resolve::Request,
) -> Result<Resolution, resolve::ResolveError> {
    let res = resolve::resolve(g, req)?;
    if req.semantics != resolve::Semantics::Classic || !res.installed.in_catalog {
        return Ok(res);
    }
    let Some(facts) = g.package_facts(&req.package)? else {
        return Ok(res);
    };
    let channel = req.channels.first().unwrap_or(&facts.default_channel);
    if let Some(b) = facts.bundles.get(&res.installed.name) {
        if !b.channels.contains(channel) && !b.channels.is_empty() {
            let holders: Vec<String> = b.channels.iter().map(|c| format!("{c:?}")).collect();
            let what = if req.channels.is_empty() {
                format!("the default channel {channel:?}")
            } else {
                format!("channel {channel:?}")
            };
            super::output::warning(format_args!(
                "{} is not in {what}, so classic OLM finds no upgrade there; it is in {}: try --channel {}",
                res.installed.name,
                holders.join(", "),
                b.channels.first().map(String::as_str).unwrap_or_default()
            ));
        }
    }
    Ok(res)
}

fn fail(e: &dyn std::fmt::Display) -> i32 {
    super::output::error(e);
    super::EXIT_FAILURE
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
