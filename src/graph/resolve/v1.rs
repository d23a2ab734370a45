//! OLM v1's choice, and its removed semver mode: filter by channels, version constraint and
//! successorship; non-deprecated first, then the highest version, then the highest release.

use super::*;
use crate::model::prop;

impl Resolver<'_> {
    /// OLM v1 and its semver mode: filter by channels, version constraint
    /// and successorship; non-deprecated first, then the highest version.
    pub(super) fn v1_hop(&self, inst: &Installed) -> Result<Hop, ResolveError> {
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
        cands.sort_by(|(a, _, _), (b, _, _)| v1_preference(a, b));
        let Some((pick, ch, edge)) = cands.first().cloned() else {
            let msg = no_bundles(pkg, req);
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

/// The order of OLM v1's candidates, the first preferred: non-deprecated first, then the
/// highest version, then the highest release, then by name. Every candidate has a version.
fn v1_preference(a: &BundleFacts, b: &BundleFacts) -> std::cmp::Ordering {
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
}

/// "no bundles found for package …", with the version range and channels asked for.
fn no_bundles(pkg: &str, req: &Request) -> String {
    let mut msg = format!("no bundles found for package {pkg:?}");
    if let Some(r) = &req.version_range {
        msg += &format!(" matching version {r:?}");
    }
    if !req.channels.is_empty() {
        msg += &format!(" in channels [{}]", req.channels.join(" "));
    }
    msg
}
