//! Upgrade resolution: from an installed bundle, where does an upgrade go under classic OLM,
//! OLM v1, or OLM v1's removed "semver" mode, hop by hop, and why not elsewhere.
//!
//! The resolver never decides itself whether one bundle upgrades from another: it runs on an
//! [`UpgradeGraph`] ([`facts`]), whose implementations take that answer from
//! [`super::EntryRule`] (the in-memory [`crate::model::Catalog`]) or from the store's
//! materialized `edge` table (built by [`super::channel_edges`], in `store::upgrade_query`).
//! Classic's ordered chain is [`super::classic_chain`] either way. On top of those edges each
//! rule set makes its own choice:
//!
//! * [`classic`]: the successor closest to the channel head;
//! * [`v1`]: filter by channels, version constraint and policy, then non-deprecated first and
//!   the highest version (then the highest release); the semver mode replaces the graph by
//!   `^V, != V`;
//! * [`openshift`]: the `olm.maxOpenShiftVersion` marks on the path.

mod classic;
pub mod facts;
mod openshift;
use openshift::mark_openshift;
mod v1;

pub use facts::{BundleFacts, Installed, PackageFacts, UpgradeGraph};

use super::EdgeKind;
use crate::version::{blang, masterminds};
use semver::Version;
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::str::FromStr;

/// Which OLM's rules to resolve with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Semantics {
    /// Classic OLM: one channel, the successor closest to the head.
    #[default]
    Classic,
    /// OLM v1 (operator-controller): catalog edges, highest version wins.
    V1,
    /// OLM v1's removed semver mode: `^V, != V`, highest version wins.
    Semver,
}

/// OLM v1's `upgradeConstraintPolicy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Policy {
    #[default]
    CatalogProvided,
    SelfCertified,
}

impl FromStr for Semantics {
    type Err = ResolveError;
    fn from_str(s: &str) -> Result<Self, ResolveError> {
        match s {
            "" | "classic" => Ok(Semantics::Classic),
            "v1" => Ok(Semantics::V1),
            "semver" => Ok(Semantics::Semver),
            _ => Err(invalid(format!(
                "unknown semantics {s:?}: use classic, v1 or semver"
            ))),
        }
    }
}

impl FromStr for Policy {
    type Err = ResolveError;
    fn from_str(s: &str) -> Result<Self, ResolveError> {
        match s {
            "" | "CatalogProvided" => Ok(Policy::CatalogProvided),
            "SelfCertified" => Ok(Policy::SelfCertified),
            _ => Err(invalid(format!(
                "unknown policy {s:?}: use CatalogProvided or SelfCertified"
            ))),
        }
    }
}

impl fmt::Display for Semantics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Semantics::Classic => "classic",
            Semantics::V1 => "v1",
            Semantics::Semver => "semver",
        })
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::CatalogProvided => "CatalogProvided",
            Policy::SelfCertified => "SelfCertified",
        })
    }
}

/// Why a resolution could not run (as opposed to running and finding no upgrade).
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The package, channel or FROM bundle does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The request or the catalog cannot be resolved (bad range, no unique head, ...).
    #[error("{0}")]
    Invalid(String),
    /// Options that do not go together (a version constraint, or two channels, under classic
    /// rules).
    #[error("{0}")]
    Usage(String),
    /// Reading the graph failed (SQLite, I/O).
    #[error("{0:#}")]
    Graph(#[from] anyhow::Error),
}

fn invalid(msg: String) -> ResolveError {
    ResolveError::Invalid(msg)
}

/// One upgrade question.
#[derive(Clone, Debug)]
pub struct Request {
    pub package: String,
    /// A bundle name, a version of the package, or `name@version`.
    pub from: String,
    /// Classic: at most one (default channel when empty). v1/semver: any of them, all if empty.
    pub channels: Vec<String>,
    /// Masterminds constraint (v1 and semver only).
    pub version_range: Option<String>,
    pub policy: Policy,
    pub semantics: Semantics,
    /// Cluster version `4.Y`: mark path bundles whose maxOpenShiftVersion blocks going beyond.
    pub openshift_version: Option<String>,
}

/// One hop of the path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub name: String,
    pub version: String,
    pub channel: String,
    /// `replaces`, `skips`, `skipRange`, `semver`, or `selfCertified` (no edge; allowed by
    /// policy SelfCertified).
    pub edge: String,
    /// The bundle this hop starts from.
    pub from: String,
    /// The bundle's `olm.maxOpenShiftVersion` value(s), as written ("" when none).
    pub max_openshift_version: String,
    /// With `openshift_version`: this bundle blocks upgrading the cluster beyond it.
    pub blocks_openshift_upgrade: bool,
    /// Why it blocks (or why its value is unusable); "" otherwise.
    pub openshift_note: String,
    /// The bundle's version is lower than the one it upgrades from: an older bundle's
    /// skipRange covers a newer version (see `validate::upgrade_lint::downgrades`).
    pub downgrade: bool,
}

/// A bundle considered and not taken, with a stable reason code and an explanation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejection {
    pub name: String,
    pub version: String,
    /// `not-in-channel`, `outside-range`, `not-a-successor`, `blocked-by-policy`,
    /// `skipped-off-chain`, `farther-from-head`, `deprecated`, `lower-version`,
    /// `major-change`, `has-dependencies` or `already-on-path`.
    pub reason: String,
    pub detail: String,
}

/// The answer: the next bundle, the whole path, and why the path ends where it does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    pub package: String,
    pub semantics: Semantics,
    pub installed: Installed,
    /// The first hop; `None` when there is no upgrade.
    pub next: Option<Step>,
    pub path: Vec<Step>,
    /// Every other bundle considered at the last resolution (from the installed bundle when
    /// there is no upgrade, else from the end of the path), and why it was not taken.
    pub rejected: Vec<Rejection>,
    /// The error OLM would report at the last resolution (v1/semver: no candidate, or a pick
    /// that declares dependencies); `None` when the path simply ends.
    pub error: Option<String>,
}

/// Under classic rules, when the installed bundle is not in the channel resolved in: a note
/// saying which channels hold it, and the `--channel` to try.
pub fn channel_note(
    g: &dyn UpgradeGraph,
    req: &Request,
    res: &Resolution,
) -> Result<Option<String>, ResolveError> {
    if req.semantics != Semantics::Classic || !res.installed.in_catalog {
        return Ok(None);
    }
    let Some(facts) = g.package_facts(&req.package)? else {
        return Ok(None);
    };
    let channel = req.channels.first().unwrap_or(&facts.default_channel);
    let Some(b) = facts.bundles.get(&res.installed.name) else {
        return Ok(None);
    };
    if b.channels.contains(channel) || b.channels.is_empty() {
        return Ok(None);
    }
    let holders: Vec<String> = b.channels.iter().map(|c| format!("{c:?}")).collect();
    let what = if req.channels.is_empty() {
        format!("the default channel {channel:?}")
    } else {
        format!("channel {channel:?}")
    };
    Ok(Some(format!(
        "{} is not in {what}, so classic OLM finds no upgrade there; it is in {}: try --channel {}",
        res.installed.name,
        holders.join(", "),
        b.channels.first().map(String::as_str).unwrap_or_default()
    )))
}

/// Resolves `req` over `g`: hop after hop until no further upgrade exists.
pub fn resolve(g: &dyn UpgradeGraph, req: &Request) -> Result<Resolution, ResolveError> {
    let facts = g.package_facts(&req.package)?.map_or_else(
        || {
            let names = g.package_names()?;
            let near = crate::text::nearest(&req.package, names.iter().map(String::as_str), 3);
            Err(ResolveError::NotFound(format!(
                "no package {:?}{}",
                req.package,
                crate::text::did_you_mean(&near)
            )))
        },
        Ok,
    )?;
    let range = match &req.version_range {
        Some(r) if req.semantics == Semantics::Classic => {
            return Err(ResolveError::Usage(format!(
                "the version constraint {r:?} applies to v1 and semver resolution; classic OLM \
                 has no version constraint"
            )))
        }
        Some(r) => Some(
            masterminds::Constraint::parse(r)
                .map_err(|e| invalid(format!("invalid version constraint {r:?}: {e}")))?,
        ),
        None => None,
    };
    let cluster = req
        .openshift_version
        .as_deref()
        .map(|v| {
            blang::parse_tolerant(v)
                .map(|v| (v.major, v.minor))
                .map_err(|e| invalid(format!("invalid OpenShift version {v:?}: {e}")))
        })
        .transpose()?;
    let classic_channel = if req.semantics == Semantics::Classic {
        if req.channels.len() > 1 {
            return Err(ResolveError::Usage(
                "classic OLM subscribes to exactly one channel; name at most one channel".into(),
            ));
        }
        let ch = req
            .channels
            .first()
            .unwrap_or(&facts.default_channel)
            .clone();
        if !facts.channels.contains(&ch) {
            let near = crate::text::nearest(&ch, facts.channels.iter().map(String::as_str), 3);
            return Err(ResolveError::NotFound(format!(
                "package {:?} has no channel {ch:?}{}",
                facts.name,
                crate::text::did_you_mean(&near)
            )));
        }
        ch
    } else {
        String::new()
    };
    let installed = parse_from(&facts, &req.from)?;
    let r = Resolver {
        g,
        req,
        facts: &facts,
        range,
        classic_channel,
    };
    let mut res = Resolution {
        package: facts.name.clone(),
        semantics: req.semantics,
        installed: installed.clone(),
        next: None,
        path: Vec::new(),
        rejected: Vec::new(),
        error: None,
    };
    let mut visited: HashSet<String> = HashSet::from([installed.name.clone()]);
    let mut cur = installed;
    loop {
        let hop = match req.semantics {
            Semantics::Classic => r.classic_hop(&cur)?,
            _ => r.v1_hop(&cur)?,
        };
        match hop {
            Hop::To(step) if visited.contains(&step.name) => {
                res.rejected.push(Rejection {
                    name: step.name.clone(),
                    version: step.version.clone(),
                    reason: "already-on-path".into(),
                    detail: format!(
                        "the next pick from {} is {}, already on the path: the graph loops",
                        cur.name, step.name
                    ),
                });
                break;
            }
            Hop::To(step) => {
                let b = &facts.bundles[&step.name];
                cur = Installed {
                    name: b.name.clone(),
                    version: b.version.clone().expect("picked bundles have versions"),
                    release: b.release.clone(),
                    in_catalog: true,
                };
                visited.insert(step.name.clone());
                res.path.push(step);
            }
            Hop::Stop { rejected, error } => {
                res.rejected = rejected;
                res.error = error;
                break;
            }
        }
    }
    for s in &mut res.path {
        mark_openshift(s, &facts.bundles[&s.name].max_openshift, cluster);
    }
    res.next = res.path.first().cloned();
    Ok(res)
}

/// FROM: `name@version`, a bundle name, or a version of exactly one bundle.
fn parse_from(facts: &PackageFacts, from: &str) -> Result<Installed, ResolveError> {
    let of_bundle = |b: &BundleFacts| match &b.version {
        Some(v) => Ok(Installed {
            name: b.name.clone(),
            version: v.clone(),
            release: b.release.clone(),
            in_catalog: true,
        }),
        None => Err(invalid(format!(
            "bundle {:?} has no valid version ({:?})",
            b.name, b.version_text
        ))),
    };
    if let Some((name, ver)) = from.rsplit_once('@') {
        let version = blang::parse_version(ver).map_err(|e| {
            invalid(format!(
                "installed bundle {from:?}: bad version {ver:?}: {e}"
            ))
        })?;
        if name.is_empty() {
            return Err(invalid(format!(
                "installed bundle {from:?}: empty bundle name"
            )));
        }
        return match facts.bundles.get(name) {
            Some(b) if b.version.as_ref() == Some(&version) => of_bundle(b),
            Some(b) => Err(invalid(format!(
                "installed bundle {from:?}: bundle {name:?} is in the catalog with version {:?}",
                b.version_text
            ))),
            None => Ok(Installed {
                name: name.to_string(),
                version,
                release: None,
                in_catalog: false,
            }),
        };
    }
    if let Some(b) = facts.bundles.get(from) {
        return of_bundle(b);
    }
    let hits: Vec<&BundleFacts> = match blang::parse_version(from) {
        Ok(v) => facts
            .bundles
            .values()
            .filter(|b| {
                b.version
                    .as_ref()
                    .is_some_and(|bv| bv.cmp_precedence(&v).is_eq())
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    match hits.as_slice() {
        [b] => of_bundle(b),
        [] => {
            let known = facts
                .bundles
                .values()
                .flat_map(|b| [b.name.as_str(), b.version_text.as_str()]);
            let near = crate::text::nearest(from, known, 3);
            Err(ResolveError::NotFound(format!(
                "{from:?} is neither a bundle nor a version of package {:?}{}; for an installed \
                 bundle that is not in the catalog write name@version",
                facts.name,
                crate::text::did_you_mean(&near)
            )))
        }
        many => Err(invalid(format!(
            "{from:?} is the version of several bundles ({}); name one",
            many.iter()
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

enum Hop {
    To(Step),
    Stop {
        rejected: Vec<Rejection>,
        error: Option<String>,
    },
}

struct Resolver<'a> {
    g: &'a dyn UpgradeGraph,
    req: &'a Request,
    facts: &'a PackageFacts,
    range: Option<masterminds::Constraint>,
    classic_channel: String,
}

fn reject(b: &BundleFacts, reason: &str, detail: String) -> Rejection {
    Rejection {
        name: b.name.clone(),
        version: b.version_text.clone(),
        reason: reason.into(),
        detail,
    }
}

/// Successor map of one channel: entry name → its first edge kind.
fn by_entry(ups: Vec<(String, EdgeKind)>) -> BTreeMap<String, EdgeKind> {
    let mut m: BTreeMap<String, EdgeKind> = BTreeMap::new();
    for (n, k) in ups {
        let e = m.entry(n).or_insert(k);
        *e = (*e).min(k);
    }
    m
}

fn step(b: &BundleFacts, channel: &str, edge: &str, from: &Installed) -> Step {
    Step {
        name: b.name.clone(),
        version: b.version_text.clone(),
        channel: channel.to_string(),
        edge: edge.to_string(),
        from: from.name.clone(),
        max_openshift_version: String::new(),
        blocks_openshift_upgrade: false,
        openshift_note: String::new(),
        downgrade: b
            .version
            .as_ref()
            .is_some_and(|v| v.cmp_precedence(&from.version).is_lt()),
    }
}

fn release_cmp(a: &Option<String>, b: &Option<String>) -> Ordering {
    crate::release::compare(a.as_deref(), b.as_deref())
}
