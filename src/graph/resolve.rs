//! Upgrade resolution: from an installed bundle, where does an upgrade go under classic OLM,
//! OLM v1, or OLM v1's removed "semver" mode, hop by hop, and why not elsewhere.
//!
//! The resolver never decides itself whether one bundle upgrades from another: it runs on an
//! [`UpgradeGraph`], whose implementations take that answer from [`super::EntryRule`] (the
//! in-memory [`Catalog`], here) or from the store's materialized `edge` table (built by
//! [`super::channel_edges`], in `store::upgrade_query`). Classic's ordered chain is
//! [`super::classic_chain`] either way. On top of those edges this module applies each rule
//! set's choice: classic takes the successor closest to the channel head (olm-clients §4.1);
//! v1 filters by channels, version constraint and policy, then takes non-deprecated first and
//! the highest version (§3.3–3.5); semver replaces the graph by `^V, != V` (§3.4). It also
//! owns [`lint`], the warnings about graphs the two OLMs resolve differently, and the
//! `olm.maxOpenShiftVersion` marks of §3.11.

use super::{blang, channel_head, classic_chain, masterminds, EdgeKind, EntryRule, Head};
use crate::diag::{Diagnostic, Rule};
use crate::model::{prop, Bundle, Catalog, Package};
use semver::Version;
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashSet};
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
    /// Reading the graph failed (SQLite, I/O).
    #[error("{0:#}")]
    Graph(#[from] anyhow::Error),
}

fn invalid(msg: String) -> ResolveError {
    ResolveError::Invalid(msg)
}

/// What the resolver needs to know about one bundle of the package.
#[derive(Clone, Debug, PartialEq)]
pub struct BundleFacts {
    pub name: String,
    /// The version as written in `olm.package`.
    pub version_text: String,
    /// Strictly parsed; `None` when the bundle has no valid version (it is then never chosen).
    pub version: Option<Version>,
    pub release: Option<String>,
    /// Deprecated by a bundle-level `olm.deprecations` entry.
    pub deprecated: bool,
    /// See [`Bundle::has_dependencies`].
    pub has_dependencies: bool,
    /// Raw JSON values of `olm.maxOpenShiftVersion` properties.
    pub max_openshift: Vec<String>,
    /// Channels listing this bundle.
    pub channels: BTreeSet<String>,
}

impl BundleFacts {
    /// Facts of a model bundle; the store builds a partial [`Bundle`] and calls this too.
    pub fn of(b: &Bundle, deprecated: bool, channels: BTreeSet<String>) -> Self {
        let version_text = b.version();
        BundleFacts {
            name: b.name.clone(),
            version: blang::parse_version(&version_text).ok(),
            version_text,
            release: b.release(),
            deprecated,
            has_dependencies: b.has_dependencies(),
            max_openshift: b
                .properties_of(prop::MAX_OCP)
                .map(|p| p.value.clone())
                .collect(),
            channels,
        }
    }
}

/// What the resolver needs to know about a package.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PackageFacts {
    pub name: String,
    pub default_channel: String,
    /// Channel names, sorted.
    pub channels: Vec<String>,
    pub bundles: BTreeMap<String, BundleFacts>,
}

impl PackageFacts {
    pub fn of(pkg: &Package) -> Self {
        let mut member: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for ch in pkg.channels.values() {
            for e in &ch.entries {
                member.entry(&e.name).or_default().insert(ch.name.clone());
            }
        }
        PackageFacts {
            name: pkg.name.clone(),
            default_channel: pkg.default_channel.clone(),
            channels: pkg.channels.keys().cloned().collect(),
            bundles: pkg
                .bundles
                .values()
                .map(|b| {
                    let chans = member.remove(b.name.as_str()).unwrap_or_default();
                    let dep = pkg.bundle_deprecation(&b.name).is_some();
                    (b.name.clone(), BundleFacts::of(b, dep, chans))
                })
                .collect(),
        }
    }
}

/// The installed bundle resolution starts from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Installed {
    pub name: String,
    #[serde(serialize_with = "ser_display")]
    pub version: Version,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// False for a `name@version` that is not a bundle of the package.
    pub in_catalog: bool,
}

fn ser_display<S: serde::Serializer>(v: &Version, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// The update graph of a catalog, as the resolver reads it. Every answer about edges must come
/// from [`EntryRule`] (directly or through edges materialized by [`super::channel_edges`]).
pub trait UpgradeGraph {
    /// The package's bundles and channels; `None` when there is no such package.
    fn package_facts(&self, package: &str) -> anyhow::Result<Option<PackageFacts>>;
    /// [`super::classic_chain`] of a channel (empty when the channel has no unique head).
    fn classic_chain(&self, package: &str, channel: &str) -> anyhow::Result<Vec<String>>;
    /// The entries of a channel that can be installed over `installed`, with each edge kind.
    fn upgrades_from(
        &self,
        package: &str,
        channel: &str,
        installed: &Installed,
    ) -> anyhow::Result<Vec<(String, EdgeKind)>>;
}

impl UpgradeGraph for Catalog {
    fn package_facts(&self, package: &str) -> anyhow::Result<Option<PackageFacts>> {
        Ok(self.packages.get(package).map(PackageFacts::of))
    }
    fn classic_chain(&self, package: &str, channel: &str) -> anyhow::Result<Vec<String>> {
        Ok(self
            .packages
            .get(package)
            .and_then(|p| p.channels.get(channel))
            .map(|ch| classic_chain(ch).into_iter().map(str::to_string).collect())
            .unwrap_or_default())
    }
    fn upgrades_from(
        &self,
        package: &str,
        channel: &str,
        inst: &Installed,
    ) -> anyhow::Result<Vec<(String, EdgeKind)>> {
        let Some(ch) = self
            .packages
            .get(package)
            .and_then(|p| p.channels.get(channel))
        else {
            return Ok(Vec::new());
        };
        Ok(ch
            .entries
            .iter()
            .flat_map(|e| {
                EntryRule::new(e)
                    .edges_from(&inst.name, Some(&inst.version))
                    .into_iter()
                    .map(|k| (e.name.clone(), k))
            })
            .collect())
    }
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

impl Request {
    /// A request from its textual parts, as the CLI and gRPC receive them ("" = unset).
    #[allow(clippy::too_many_arguments)]
    pub fn parse(
        package: &str,
        from: &str,
        channels: Vec<String>,
        version_range: &str,
        policy: &str,
        semantics: &str,
        openshift_version: &str,
    ) -> Result<Request, ResolveError> {
        let opt = |s: &str| (!s.trim().is_empty()).then(|| s.to_string());
        Ok(Request {
            package: package.to_string(),
            from: from.to_string(),
            channels,
            version_range: opt(version_range),
            policy: policy.parse()?,
            semantics: semantics.parse()?,
            openshift_version: opt(openshift_version),
        })
    }
}

/// One hop of the path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
}

/// A bundle considered and not taken, with a stable reason code and an explanation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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

/// Resolves `req` over `g`: hop after hop until no further upgrade exists.
pub fn resolve(g: &dyn UpgradeGraph, req: &Request) -> Result<Resolution, ResolveError> {
    let facts = g
        .package_facts(&req.package)?
        .ok_or_else(|| ResolveError::NotFound(format!("no package {:?}", req.package)))?;
    let range = match &req.version_range {
        Some(r) if req.semantics == Semantics::Classic => {
            return Err(invalid(format!(
                "--version {r:?} applies to v1 and semver resolution; classic OLM has no version \
                 constraint"
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
                .map_err(|e| invalid(format!("invalid --openshift-version {v:?}: {e}")))
        })
        .transpose()?;
    let classic_channel = if req.semantics == Semantics::Classic {
        if req.channels.len() > 1 {
            return Err(invalid(
                "classic OLM subscribes to exactly one channel; give at most one --channel".into(),
            ));
        }
        let ch = req
            .channels
            .first()
            .unwrap_or(&facts.default_channel)
            .clone();
        if !facts.channels.contains(&ch) {
            return Err(ResolveError::NotFound(format!(
                "package {:?} has no channel {ch:?}",
                facts.name
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
        let version = blang::parse_version(ver)
            .map_err(|e| invalid(format!("FROM {from:?}: bad version {ver:?}: {e}")))?;
        if name.is_empty() {
            return Err(invalid(format!("FROM {from:?}: empty bundle name")));
        }
        return match facts.bundles.get(name) {
            Some(b) if b.version.as_ref() == Some(&version) => of_bundle(b),
            Some(b) => Err(invalid(format!(
                "FROM {from:?}: bundle {name:?} is in the catalog with version {:?}",
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
        [] => Err(ResolveError::NotFound(format!(
            "FROM {from:?} is neither a bundle nor a version of package {:?}; for an installed \
             bundle that is not in the catalog write name@version",
            facts.name
        ))),
        many => Err(invalid(format!(
            "FROM {from:?} is the version of several bundles ({}); name one",
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
    }
}

fn release_cmp(a: &Option<String>, b: &Option<String>) -> Ordering {
    crate::release::compare(a.as_deref(), b.as_deref())
}

impl Resolver<'_> {
    /// Classic OLM (§4.1): entries on the channel's ordered chain that replace, skip or
    /// range-cover the installed bundle; the one closest to the head wins.
    fn classic_hop(&self, inst: &Installed) -> Result<Hop, ResolveError> {
        let (pkg, ch) = (&self.facts.name, &self.classic_channel);
        let chain = self.g.classic_chain(pkg, ch)?;
        if chain.is_empty() {
            return Err(invalid(format!(
                "channel {ch:?} of package {pkg:?} has no unique head; \
                 classic OLM requires a unique replacement chain"
            )));
        }
        let ups = by_entry(self.g.upgrades_from(pkg, ch, inst)?);
        let pick = chain.iter().find(|n| ups.contains_key(*n));
        let mut rejected = Vec::new();
        for b in self.facts.bundles.values() {
            if b.name == inst.name || Some(&b.name) == pick {
                continue;
            }
            let on_chain = chain.contains(&b.name);
            let head = pick.map(String::as_str).unwrap_or("");
            let (reason, detail) = match ups.get(&b.name) {
                _ if !b.channels.contains(ch) => {
                    ("not-in-channel", format!("not an entry of channel {ch:?}"))
                }
                Some(k) if !on_chain => (
                    "skipped-off-chain",
                    format!(
                        "has a {} edge from {}, but is not on the channel's replaces chain \
                         from the head (skipped by another entry, or not reached): \
                         classic OLM never installs it",
                        k.as_str(),
                        inst.name
                    ),
                ),
                Some(k) => (
                    "farther-from-head",
                    format!(
                        "has a {} edge from {}, but {head} is closer to the channel head",
                        k.as_str(),
                        inst.name
                    ),
                ),
                None => (
                    "not-a-successor",
                    format!(
                        "neither replaces nor skips {}, and has no skipRange covering {}",
                        inst.name, inst.version
                    ),
                ),
            };
            rejected.push(reject(b, reason, detail));
        }
        Ok(match pick.and_then(|n| self.facts.bundles.get(n)) {
            Some(b) => Hop::To(step(b, ch, ups[&b.name].as_str(), inst)),
            None => Hop::Stop {
                rejected,
                error: None,
            },
        })
    }

    /// OLM v1 (§3.3–3.5) and its semver mode (§3.4): filter by channels, version constraint
    /// and successorship; non-deprecated first, then the highest version.
    fn v1_hop(&self, inst: &Installed) -> Result<Hop, ResolveError> {
        let (pkg, req) = (&self.facts.name, self.req);
        let considered: Vec<&String> = if req.channels.is_empty() {
            self.facts.channels.iter().collect()
        } else {
            self.facts
                .channels
                .iter()
                .filter(|c| req.channels.contains(c))
                .collect()
        };
        let mut ups: Vec<(&String, BTreeMap<String, EdgeKind>)> = Vec::new();
        if req.semantics == Semantics::V1 {
            for ch in &considered {
                ups.push((ch, by_entry(self.g.upgrades_from(pkg, ch, inst)?)));
            }
        }
        let caret = masterminds::caret_successor_of(&inst.version);
        let same = |b: &BundleFacts, v: &Version| {
            v.cmp_precedence(&inst.version).is_eq() && b.release == inst.release
        };
        let mut rejected = Vec::new();
        // (bundle, channel, edge)
        let mut cands: Vec<(&BundleFacts, String, String)> = Vec::new();
        for b in self.facts.bundles.values() {
            let Some(v) = &b.version else {
                rejected.push(reject(
                    b,
                    "not-a-successor",
                    format!("has no valid version ({:?})", b.version_text),
                ));
                continue;
            };
            let Some(in_ch) = considered.iter().find(|c| b.channels.contains(**c)) else {
                let which = if req.channels.is_empty() {
                    "any channel".to_string()
                } else {
                    format!("channels {:?}", req.channels)
                };
                rejected.push(reject(
                    b,
                    "not-in-channel",
                    format!("not an entry of {which}"),
                ));
                continue;
            };
            if let Some(r) = &self.range {
                if !r.matches(v) {
                    let range = req.version_range.as_deref().unwrap_or("");
                    rejected.push(reject(
                        b,
                        "outside-range",
                        format!("version {v} does not match {range:?}"),
                    ));
                    continue;
                }
            }
            let edge = match req.semantics {
                Semantics::V1 => ups.iter().find_map(|(c, m)| {
                    m.get(&b.name)
                        .map(|k| ((*c).clone(), k.as_str().to_string()))
                }),
                _ => caret
                    .matches(v)
                    .then(|| ((*in_ch).clone(), "semver".to_string())),
            };
            match edge {
                Some((c, e)) => cands.push((b, c, e)),
                None if same(b, v) => cands.push((b, (*in_ch).clone(), String::new())),
                None if req.policy == Policy::SelfCertified => {
                    cands.push((b, (*in_ch).clone(), "selfCertified".into()))
                }
                None => rejected.push(self.not_successor(b, v, inst)),
            }
        }
        cands.sort_by(|(a, _, _), (b, _, _)| {
            a.deprecated
                .cmp(&b.deprecated)
                .then_with(|| {
                    b.version
                        .as_ref()
                        .unwrap()
                        .cmp_precedence(a.version.as_ref().unwrap())
                })
                .then_with(|| release_cmp(&b.release, &a.release))
                .then_with(|| a.name.cmp(&b.name))
        });
        let Some((pick, ch, edge)) = cands.first().cloned() else {
            let mut msg = format!("no bundles found for package {pkg:?}");
            if let Some(r) = &req.version_range {
                msg += &format!(" matching version {r:?}");
            }
            if !req.channels.is_empty() {
                msg += &format!(" in channels [{}]", req.channels.join(" "));
            }
            rejected.sort_by(|a, b| a.name.cmp(&b.name));
            return Ok(Hop::Stop {
                rejected: rejected
                    .into_iter()
                    .filter(|r| r.name != inst.name)
                    .collect(),
                error: Some(format!(
                    "error upgrading from currently installed version {:?}: {msg}",
                    inst.version.to_string()
                )),
            });
        };
        let stays = same(pick, pick.version.as_ref().unwrap());
        for (b, _, _) in &cands[1..] {
            rejected.push(if b.deprecated && !pick.deprecated {
                reject(
                    b,
                    "deprecated",
                    format!("deprecated; the non-deprecated {} sorts first", pick.name),
                )
            } else {
                let what = if stays {
                    format!("the installed version {}", inst.version)
                } else {
                    format!("{} ({})", pick.name, pick.version_text)
                };
                reject(
                    b,
                    "lower-version",
                    format!("a candidate, but {what} is higher and the highest version wins"),
                )
            });
        }
        let mut error = None;
        if !stays && pick.has_dependencies {
            let detail = format!(
                "picked, but declares dependencies ({}, {} or {}): \
                 OLM v1 refuses it and does not fall back",
                prop::GVK_REQUIRED,
                prop::PACKAGE_REQUIRED,
                prop::CONSTRAINT
            );
            rejected.push(reject(pick, "has-dependencies", detail));
            error = Some(format!(
                "bundle {:?} was picked but declares dependencies; \
                 OLM v1 does not resolve dependencies",
                pick.name
            ));
        }
        rejected.retain(|r| r.name != inst.name);
        rejected.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(if stays || error.is_some() {
            Hop::Stop { rejected, error }
        } else {
            Hop::To(step(pick, &ch, &edge, inst))
        })
    }

    fn not_successor(&self, b: &BundleFacts, v: &Version, inst: &Installed) -> Rejection {
        let iv = &inst.version;
        if self.req.semantics == Semantics::Semver
            && v.cmp_precedence(iv).is_gt()
            && v.pre.is_empty()
        {
            let (rule, crossed) = if iv.major > 0 {
                ("no automatic major upgrade", v.major != iv.major)
            } else if iv.minor > 0 {
                (
                    "0.y: patch upgrades within 0.y only",
                    v.major != 0 || v.minor != iv.minor,
                )
            } else {
                ("0.0.z: no automatic upgrades", true)
            };
            if crossed {
                return reject(b, "major-change", format!("not in ^{iv}, != {iv} ({rule})"));
            }
        }
        let why = match self.req.semantics {
            Semantics::Semver if !v.pre.is_empty() => {
                format!("a pre-release, never in ^{iv}, != {iv}")
            }
            Semantics::Semver => format!("not in ^{iv}, != {iv}"),
            _ => format!(
                "no entry in the considered channels replaces or skips {}, \
                 or has a skipRange covering {iv}",
                inst.name
            ),
        };
        if v.cmp_precedence(iv).is_gt() {
            let detail = format!(
                "{why}; policy CatalogProvided requires a successor \
                 (SelfCertified would allow it)"
            );
            reject(b, "blocked-by-policy", detail)
        } else {
            reject(b, "not-a-successor", why)
        }
    }
}

/// §3.11: records the bundle's `olm.maxOpenShiftVersion` and, for a cluster at `4.Y`, whether
/// it blocks the cluster upgrade: the value must be exactly `major.minor` (unusable values
/// count as blocking) and blocks when below the cluster's next minor (4.23 counts as 5.0).
fn mark_openshift(s: &mut Step, values: &[String], cluster: Option<(u64, u64)>) {
    let texts: Vec<String> = values
        .iter()
        .map(|v| v.trim_matches('"').to_string())
        .collect();
    s.max_openshift_version = texts.join(", ");
    let Some(cluster) = cluster else { return };
    let next = match (cluster.0, cluster.1 + 1) {
        (4, 23) => (5, 0),
        n => n,
    };
    let parsed = match texts.as_slice() {
        [] => return,
        [one] if one.trim().is_empty() => Err("the value is empty".to_string()),
        [one] => blang::parse_tolerant(one)
            .map_err(|e| e.to_string())
            .and_then(|v| {
                if v.patch == 0 && v.pre.is_empty() && v.build.is_empty() {
                    Ok((v.major, v.minor))
                } else {
                    Err(format!("{one:?} is not exactly major.minor"))
                }
            }),
        _ => Err("the bundle has several olm.maxOpenShiftVersion properties".into()),
    };
    let (block, note) = match parsed {
        Ok(max) if max < next => (
            true,
            format!(
                "olm.maxOpenShiftVersion {}.{} is below {}.{}, the next minor after {}.{}: while \
                 installed, it blocks the cluster upgrade",
                max.0, max.1, next.0, next.1, cluster.0, cluster.1
            ),
        ),
        Ok(_) => (false, String::new()),
        Err(e) => (
            true,
            format!(
                "unusable olm.maxOpenShiftVersion ({e}); OpenShift treats it as \
                 incompatible and blocks the cluster upgrade"
            ),
        ),
    };
    s.blocks_openshift_upgrade = block;
    s.openshift_note = note;
}

/// Warnings for graphs classic OLM and OLM v1 resolve differently (`opreg validate --upgrades`).
pub fn lint(cat: &Catalog) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for pkg in cat.packages.values() {
        let versions = super::Versions::of(pkg);
        for ch in pkg.channels.values() {
            let mut warn = |bundle: &str, msg: String| {
                let d = Diagnostic::warning(Rule::UpgradeLint, msg).at(&ch.origin);
                out.push(d.package(&pkg.name).channel(&ch.name).bundle(bundle));
            };
            // 1. A head below the channel's highest version strands v1 users below it.
            if let Head::One(head) = channel_head(ch) {
                let hv = versions.get(head);
                let top = ch
                    .entries
                    .iter()
                    .filter_map(|e| versions.get(&e.name).map(|v| (v, &e.name)))
                    .max_by(|a, b| a.0.cmp_precedence(b.0));
                if let (Some(hv), Some((tv, top))) = (hv, top) {
                    if tv.cmp_precedence(hv).is_gt() {
                        let msg = format!(
                            "the channel head {head} ({hv}) is not the highest version: {top} is \
                             {tv}. Classic OLM moves users to the head; OLM v1 never moves to a \
                             lower version, so users who reach {top} stay there"
                        );
                        warn(head, msg);
                    }
                }
            }
            // 2. Upgrades that pass only through a skipped entry: v1 takes them, classic never.
            let chain: Vec<&str> = classic_chain(ch);
            let rules: Vec<EntryRule> = ch.entries.iter().map(EntryRule::new).collect();
            let has_chain_successor = |name: &str| {
                rules.iter().any(|r| {
                    chain.contains(&r.entry.name.as_str())
                        && !r.edges_from(name, versions.get(name)).is_empty()
                })
            };
            for rule in &rules {
                let e = rule.entry;
                let skippers: Vec<&str> = ch
                    .entries
                    .iter()
                    .filter(|o| o.skips.contains(&e.name))
                    .map(|o| o.name.as_str())
                    .collect();
                if skippers.is_empty() {
                    continue;
                }
                let skippers = skippers.join(", ");
                let mut targets: BTreeSet<&str> = BTreeSet::from([e.replaces.as_str()]);
                targets.extend(e.skips.iter().map(String::as_str));
                targets.extend(versions.0.keys().map(String::as_str));
                for t in targets {
                    if rule.edges_from(t, versions.get(t)).is_empty() || has_chain_successor(t) {
                        continue;
                    }
                    let msg = format!(
                        "{t} upgrades only through {}, which {skippers} skips: OLM v1 takes that \
                         edge, classic OLM never installs a skipped entry and leaves {t} without \
                         an upgrade",
                        e.name
                    );
                    warn(&e.name, msg);
                }
                if rule.range.is_some() {
                    let msg = format!(
                        "{} is skipped by {skippers}, so classic OLM ignores its skipRange {:?}: \
                         installed versions in that range that no chain entry covers reach {} \
                         only under OLM v1",
                        e.name, e.skip_range, e.name
                    );
                    warn(&e.name, msg);
                }
            }
            // 3. skipRange without replaces: older versions drop out of the channel.
            for e in &ch.entries {
                if !e.skip_range.is_empty() && e.replaces.is_empty() {
                    let msg = format!(
                        "{} has a skipRange {:?} but no replaces: older versions drop out of the \
                         channel and can no longer be installed with startingCSV; set replaces \
                         as well",
                        e.name, e.skip_range
                    );
                    warn(&e.name, msg);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Channel, ChannelEntry};

    fn marked(values: &[&str], cluster: (u64, u64)) -> (bool, String) {
        let mut s = Step {
            name: String::new(),
            version: String::new(),
            channel: String::new(),
            edge: String::new(),
            from: String::new(),
            max_openshift_version: String::new(),
            blocks_openshift_upgrade: false,
            openshift_note: String::new(),
        };
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        mark_openshift(&mut s, &values, Some(cluster));
        (s.blocks_openshift_upgrade, s.openshift_note)
    }

    #[test]
    fn max_openshift_version_compares_major_minor_with_the_next_minor() {
        assert!(marked(&["\"4.12\""], (4, 12)).0);
        assert!(!marked(&["\"4.13\""], (4, 12)).0);
        assert!(
            !marked(&["4.13"], (4, 12)).0,
            "a JSON number reads the same"
        );
        assert!(
            marked(&["4.1"], (4, 9)).0,
            "4.10 turned into 4.1 by YAML blocks"
        );
        // 4.22's next minor counts as 5.0.
        assert!(marked(&["\"4.30\""], (4, 22)).0);
        assert!(!marked(&["\"5.0\""], (4, 22)).0);
        assert!(!marked(&["\"4.30\""], (4, 21)).0);
        // Unusable values count as blocking.
        for bad in [
            &["\"4.12.1\""][..],
            &["\"\""],
            &["\"4.20\"", "\"4.21\""],
            &["\"four\""],
        ] {
            let (block, note) = marked(bad, (4, 12));
            assert!(block && note.contains("unusable"), "{bad:?}: {note}");
        }
        assert_eq!(marked(&[], (4, 12)), (false, String::new()));
    }

    fn entry(name: &str, replaces: &str, skips: &[&str], range: &str) -> ChannelEntry {
        ChannelEntry {
            name: name.into(),
            replaces: replaces.into(),
            skips: skips.iter().map(|s| s.to_string()).collect(),
            skip_range: range.into(),
        }
    }

    fn catalog(entries: Vec<ChannelEntry>) -> Catalog {
        let mut pkg = Package {
            name: "p".into(),
            default_channel: "c".into(),
            ..Default::default()
        };
        for e in &entries {
            let v = e.name.trim_start_matches("p.v");
            pkg.bundles.insert(
                e.name.clone(),
                Bundle {
                    name: e.name.clone(),
                    properties: vec![crate::model::Property {
                        r#type: prop::PACKAGE.into(),
                        value: format!(r#"{{"packageName":"p","version":"{v}"}}"#),
                    }],
                    ..Default::default()
                },
            );
        }
        let ch = Channel {
            name: "c".into(),
            entries,
            ..Default::default()
        };
        pkg.channels.insert("c".into(), ch);
        let mut cat = Catalog::default();
        cat.packages.insert("p".into(), pkg);
        cat
    }

    fn lints(cat: &Catalog) -> Vec<String> {
        lint(cat).into_iter().map(|d| d.message).collect()
    }

    #[test]
    fn lint_finds_upgrades_only_through_a_skipped_entry() {
        // 1.0.0 upgrades only via 1.1.0, which 2.0.0 skips: v1 takes it, classic never.
        let cat = catalog(vec![
            entry("p.v2.0.0", "", &["p.v1.1.0"], ""),
            entry("p.v1.1.0", "p.v1.0.0", &[], ""),
            entry("p.v1.0.0", "", &[], ""),
        ]);
        let l = lints(&cat);
        assert!(
            l.iter()
                .any(|m| m.starts_with("p.v1.0.0 upgrades only through p.v1.1.0")),
            "{l:?}"
        );
        // Once the skipper also replaces 1.0.0, both OLMs agree and nothing is reported.
        let cat = catalog(vec![
            entry("p.v2.0.0", "p.v1.0.0", &["p.v1.1.0"], ""),
            entry("p.v1.1.0", "p.v1.0.0", &[], ""),
            entry("p.v1.0.0", "", &[], ""),
        ]);
        assert_eq!(lints(&cat), Vec::<String>::new());
    }

    #[test]
    fn lint_finds_a_head_below_the_top_and_a_range_without_replaces() {
        let cat = catalog(vec![
            entry("p.v1.1.0", "p.v1.9.0", &[], ""),
            entry("p.v1.9.0", "", &[], ">=1.0.0 <1.9.0"),
        ]);
        let l = lints(&cat);
        assert_eq!(l.len(), 2, "{l:?}");
        assert!(l[0].contains("head p.v1.1.0 (1.1.0) is not the highest version"));
        assert!(l[1].contains("p.v1.9.0 has a skipRange"));
    }
}
