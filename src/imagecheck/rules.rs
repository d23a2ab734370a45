//! The image rules: those decided from the reference alone ([`offline`]: pinning, allowed
//! registries) and those decided from the registry's answer ([`online`]: missing, unreachable,
//! platforms, multi-arch bundle images). One finding per bundle that names the image.

use super::lookup::Answer;
use super::refs::{Platform, Use, Wanted};
use super::remote::Served;
use super::{Finding, Options, Rule};
use crate::diag::Severity;

fn finding(sev: Severity, rule: Rule, w: &Wanted, u: &Use, msg: String, help: &str) -> Finding {
    Finding {
        severity: sev,
        rule,
        package: u.package.clone(),
        bundle: u.bundle.clone(),
        image: w.reference.clone(),
        location: None,
        message: msg,
        help: help.to_string(),
    }
}

/// The registry host of a reference (after Docker Hub's normalisation), or the reference.
pub fn registry_of(reference: &str) -> String {
    crate::imageref::parse(reference)
        .map(|r| r.domain)
        .unwrap_or_else(|_| reference.to_string())
}

/// Whether `reference` lies under one of `allowed` (`HOST[/PATH]`), at a path boundary,
/// both sides after Docker Hub's normalisation (`nginx` is `docker.io/library/nginx`).
pub fn allowed(reference: &str, allowed: &[String]) -> bool {
    let Ok(r) = crate::imageref::parse(reference) else {
        return false;
    };
    let name = format!("{}/{}", r.domain, r.path);
    allowed.iter().any(|a| {
        let a = a.trim().trim_end_matches('/');
        let prefix = match a.split_once('/') {
            Some((host, path)) => {
                let host = crate::imageref::normalize_docker_hub(Some(host), "x/y").0;
                format!("{host}/{path}")
            }
            None => crate::imageref::normalize_docker_hub(Some(a), "x/y").0,
        };
        !a.is_empty()
            && name
                .strip_prefix(prefix.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// Pinning and allowed registries: no request needed.
pub fn offline(w: &Wanted, opts: &Options) -> Vec<Finding> {
    let mut out = Vec::new();
    let pinned = crate::imageref::parse(&w.reference).is_ok_and(|r| r.digest.is_some());
    let sev = if opts.require_digests {
        Severity::Error
    } else {
        Severity::Warning
    };
    for u in &w.uses {
        if !pinned {
            out.push(finding(
                sev,
                Rule::ImageUnpinned,
                w,
                u,
                "referenced by tag, not by digest: what it names can change".into(),
                "name the image by digest (IMAGE@sha256:...), as a disconnected mirror needs",
            ));
        }
        if !opts.allowed_registries.is_empty() && !allowed(&w.reference, &opts.allowed_registries) {
            out.push(finding(
                Severity::Error,
                Rule::ImageRegistryNotAllowed,
                w,
                u,
                format!(
                    "{} is not under any of --allowed-registries ({})",
                    registry_of(&w.reference),
                    opts.allowed_registries.join(", ")
                ),
                "push the image to an allowed registry and name it there",
            ));
        }
    }
    out
}

fn platform_list(p: &[Platform]) -> String {
    if p.is_empty() {
        return "no platform".into();
    }
    p.iter()
        .map(|(os, arch)| format!("{os}/{arch}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the registry's answer says about each use of the image.
pub fn online(w: &Wanted, answer: &Answer) -> Vec<Finding> {
    let mut out = Vec::new();
    match answer {
        Answer::Skipped => {}
        Answer::Missing { detail } => {
            for u in &w.uses {
                out.push(finding(
                    Severity::Error,
                    Rule::ImageMissing,
                    w,
                    u,
                    format!("not found: {detail}"),
                    "push the image, or correct the reference in the bundle",
                ));
            }
        }
        Answer::Unreachable { detail, denied } => {
            let help = if *denied {
                "give credentials for the registry in an auth file ($REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json or ~/.docker/config.json); some registries also deny a repository that does not exist"
            } else {
                "check the registry's address, its TLS trust (--cert-dir, certs.d) and the network"
            };
            for u in &w.uses {
                out.push(finding(
                    Severity::Error,
                    Rule::ImageUnreachable,
                    w,
                    u,
                    detail.clone(),
                    help,
                ));
            }
        }
        Answer::Found {
            served,
            location,
            mirror,
        } => {
            for u in &w.uses {
                let mut f = match (u.bundle_image, served) {
                    (true, Served::Index(_)) => Some(finding(
                        Severity::Warning,
                        Rule::BundleImageMultiArch,
                        w,
                        u,
                        "the bundle image is an index (multi-arch); a bundle image holds only manifests and is single-platform".into(),
                        "push the bundle image as a single image manifest",
                    )),
                    (true, _) => None,
                    (false, served) => platform_gap(w, u, served),
                };
                if let Some(f) = &mut f {
                    if *mirror {
                        f.location = Some(location.clone());
                    }
                }
                out.extend(f);
            }
        }
    }
    out
}

/// The platforms `u` declares that `served` lacks, as one finding.
fn platform_gap(w: &Wanted, u: &Use, served: &Served) -> Option<Finding> {
    let has: Vec<Platform> = match served {
        Served::Index(p) => p.clone(),
        Served::Image(Some(p)) => vec![p.clone()],
        Served::Image(None) => return None,
    };
    let lacking: Vec<Platform> = u
        .platforms
        .iter()
        .filter(|p| !has.contains(p))
        .cloned()
        .collect();
    if lacking.is_empty() {
        return None;
    }
    let kind = match served {
        Served::Index(_) => "an index of",
        Served::Image(_) => "a single image for",
    };
    Some(finding(
        Severity::Error,
        Rule::ImagePlatformMissing,
        w,
        u,
        format!(
            "does not serve {}, which the bundle declares: it is {kind} {}",
            platform_list(&lacking),
            platform_list(&has)
        ),
        "push the image for every platform the CSV's operatorframework.io/arch.* and os.* labels declare (linux/amd64 when there are none), or drop the label",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(r: &str, own: bool, platforms: &[(&str, &str)]) -> Wanted {
        Wanted {
            reference: r.into(),
            uses: vec![Use {
                package: "p".into(),
                bundle: "p.v1".into(),
                bundle_image: own,
                platforms: platforms
                    .iter()
                    .map(|(o, a)| (o.to_string(), a.to_string()))
                    .collect(),
            }],
        }
    }

    fn rules(f: &[Finding]) -> Vec<&'static str> {
        f.iter().map(|f| f.rule.id()).collect()
    }

    #[test]
    fn allowed_registries_match_at_a_path_boundary_after_docker_hub_normalisation() {
        let a = |r: &str, list: &[&str]| {
            allowed(r, &list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        assert!(a("quay.io/org/op:1", &["quay.io/org"]));
        assert!(a("quay.io/org/op:1", &["quay.io"]));
        assert!(!a("quay.io/organisation/op:1", &["quay.io/org"]));
        assert!(!a("quay.io.evil.com/org/op:1", &["quay.io"]));
        assert!(a("nginx:1", &["docker.io/library"]));
        assert!(a("nginx:1", &["index.docker.io"]));
        assert!(!a("nginx:1", &["docker.io/lib"]));
        assert!(a("registry.redhat.io/x/y@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", &["ghcr.io", "registry.redhat.io/"]));
    }

    #[test]
    fn unpinned_is_a_warning_unless_digests_are_required() {
        let mut o = Options::default();
        let f = offline(&w("q.io/a/b:1", false, &[]), &o);
        assert_eq!(rules(&f), vec!["image-unpinned"]);
        assert_eq!(f[0].severity, Severity::Warning);
        o.require_digests = true;
        assert_eq!(
            offline(&w("q.io/a/b:1", false, &[]), &o)[0].severity,
            Severity::Error
        );
        let pinned = format!("q.io/a/b@sha256:{}", "0".repeat(64));
        assert!(offline(&w(&pinned, false, &[]), &o).is_empty());
        o.allowed_registries = vec!["r.io".into()];
        assert_eq!(
            rules(&offline(&w(&pinned, false, &[]), &o)),
            vec!["image-registry-not-allowed"]
        );
    }

    #[test]
    fn platforms_are_checked_for_related_images_only_and_indexes_warn_for_bundles() {
        let arm = [("linux", "amd64"), ("linux", "arm64")];
        let index = |p: &[(&str, &str)]| Answer::Found {
            served: Served::Index(
                p.iter()
                    .map(|(o, a)| (o.to_string(), a.to_string()))
                    .collect(),
            ),
            location: "m.local/x".into(),
            mirror: true,
        };
        let f = online(&w("q.io/x:1", false, &arm), &index(&[("linux", "amd64")]));
        assert_eq!(rules(&f), vec!["image-platform-missing"]);
        assert!(
            f[0].message.contains("does not serve linux/arm64"),
            "{}",
            f[0].message
        );
        assert_eq!(f[0].location.as_deref(), Some("m.local/x"));
        assert!(online(&w("q.io/x:1", false, &arm), &index(&arm)).is_empty());
        // The bundle's own image: never a platform finding; an index is a warning.
        let f = online(&w("q.io/b:1", true, &arm), &index(&[("linux", "amd64")]));
        assert_eq!(rules(&f), vec!["bundle-image-multi-arch"]);
        let single = Answer::Found {
            served: Served::Image(Some(("linux".into(), "amd64".into()))),
            location: "q.io/x:1".into(),
            mirror: false,
        };
        assert!(online(&w("q.io/b:1", true, &arm), &single).is_empty());
        let f = online(&w("q.io/x:1", false, &arm), &single);
        assert!(f[0].message.contains("a single image for linux/amd64"));
        assert!(online(&w("q.io/x:1", false, &[("linux", "amd64")]), &single).is_empty());
    }

    #[test]
    fn missing_and_unreachable_are_told_apart() {
        let m = Answer::Missing { detail: "x".into() };
        assert_eq!(
            rules(&online(&w("q.io/x:1", false, &[]), &m)),
            vec!["image-missing"]
        );
        let u = Answer::Unreachable {
            detail: "denied".into(),
            denied: true,
        };
        let f = online(&w("q.io/x:1", false, &[]), &u);
        assert_eq!(rules(&f), vec!["image-unreachable"]);
        assert!(f[0].help.contains("credentials"));
    }
}
