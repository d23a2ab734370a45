//! Docker references as containers-policy.json compares them: the scopes a reference is
//! looked up under (`transports.docker`: the image, its repository, each namespace above it,
//! `*.` wildcards of its host), and the `signedIdentity` rules that decide whether a
//! signature's claimed identity is good for the image pulled. The verdicts are containers/image's
//! (`policy_reference_match.go`, `docker/policyconfiguration`).

use super::Error;
use crate::imageref;

/// A reference after docker.io normalization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    /// `domain/path`.
    pub name: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl Named {
    /// Parses like `reference.ParseNormalizedNamed`.
    pub fn parse(s: &str) -> Result<Named, Error> {
        let n = imageref::parse(s).map_err(|e| Error::from(e.to_string()))?;
        Ok(Named {
            name: format!("{}/{}", n.domain, n.path),
            tag: n.tag,
            digest: n.digest,
        })
    }

    /// Neither tag nor digest.
    pub fn is_name_only(&self) -> bool {
        self.tag.is_none() && self.digest.is_none()
    }

    /// The whole reference: `name[:tag][@digest]`.
    pub fn full(&self) -> String {
        let mut s = self.name.clone();
        if let Some(t) = &self.tag {
            s.push(':');
            s.push_str(t);
        }
        if let Some(d) = &self.digest {
            s.push('@');
            s.push_str(d);
        }
        s
    }

    /// The scope naming this image alone: `name@digest` when there is a digest (a pull by
    /// digest), else `name:tag`.
    pub fn identity(&self) -> String {
        match (&self.digest, &self.tag) {
            (Some(d), _) => format!("{}@{d}", self.name),
            (None, Some(t)) => format!("{}:{t}", self.name),
            (None, None) => self.name.clone(),
        }
    }

    /// The scopes looked up after [`Named::identity`], most specific first: the repository, each
    /// namespace above it, then `*.` wildcards of the host, its port left out.
    pub fn namespaces(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut name = self.name.as_str();
        loop {
            out.push(name.to_string());
            match name.rfind('/') {
                Some(i) => name = &name[..i],
                None => break,
            }
        }
        let mut host = name.split(':').next().unwrap_or(name);
        while let Some(i) = host.find('.') {
            host = &host[i + 1..];
            out.push(format!("*.{host}"));
        }
        out
    }
}

/// `signedIdentity`: which claimed identities a signature may have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignedIdentity {
    MatchExact,
    MatchRepoDigestOrExact,
    MatchRepository,
    ExactReference(String),
    ExactRepository(String),
    RemapIdentity {
        prefix: String,
        signed_prefix: String,
    },
}

fn repo_digest_or_exact(intended: &Named, signature: &Named) -> bool {
    if signature.is_name_only() {
        return false;
    }
    match (&intended.tag, &intended.digest) {
        (Some(_), _) => signature.full() == intended.full(),
        (None, Some(_)) => signature.name == intended.name,
        (None, None) => false,
    }
}

impl SignedIdentity {
    /// True when a signature claiming `claimed` is good for pulling `intended`.
    pub fn matches(&self, intended: &Named, claimed: &str) -> bool {
        let Ok(sig) = Named::parse(claimed) else {
            return false;
        };
        match self {
            SignedIdentity::MatchExact => {
                !intended.is_name_only() && !sig.is_name_only() && sig.full() == intended.full()
            }
            SignedIdentity::MatchRepoDigestOrExact => repo_digest_or_exact(intended, &sig),
            SignedIdentity::MatchRepository => sig.name == intended.name,
            SignedIdentity::ExactReference(r) => Named::parse(r).is_ok_and(|want| {
                !want.is_name_only() && !sig.is_name_only() && sig.full() == want.full()
            }),
            SignedIdentity::ExactRepository(r) => {
                Named::parse(r).is_ok_and(|want| sig.name == want.name)
            }
            SignedIdentity::RemapIdentity {
                prefix,
                signed_prefix,
            } => match remap(intended, prefix, signed_prefix) {
                Some(remapped) => repo_digest_or_exact(&remapped, &sig),
                None => false,
            },
        }
    }

    /// Reads a `signedIdentity` object.
    pub fn from_json(v: &serde_json::Value) -> Result<SignedIdentity, Error> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::from("signedIdentity is not a JSON object"))?;
        let kind = o.get("type").and_then(|t| t.as_str()).unwrap_or("");
        let fields: &[&str] = match kind {
            "matchExact" | "matchRepoDigestOrExact" | "matchRepository" => &["type"],
            "exactReference" => &["type", "dockerReference"],
            "exactRepository" => &["type", "dockerRepository"],
            "remapIdentity" => &["type", "prefix", "signedPrefix"],
            _ => return Err(Error::from(format!("unknown signedIdentity type {kind:?}"))),
        };
        for k in o.keys() {
            if !fields.contains(&k.as_str()) {
                return Err(Error::from(format!(
                    "signedIdentity {kind}: unknown field {k:?}"
                )));
            }
        }
        let s = |k: &str| -> Result<String, Error> {
            o.get(k)
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .ok_or_else(|| {
                    Error::from(format!(
                        "signedIdentity {kind}: {k} is missing or not a string"
                    ))
                })
        };
        Ok(match kind {
            "matchExact" => SignedIdentity::MatchExact,
            "matchRepoDigestOrExact" => SignedIdentity::MatchRepoDigestOrExact,
            "matchRepository" => SignedIdentity::MatchRepository,
            "exactReference" => {
                let r = s("dockerReference")?;
                let n = Named::parse(&r)
                    .map_err(|e| Error::from(format!("invalid dockerReference {r:?}: {e}")))?;
                if n.is_name_only() {
                    return Err(Error::from(format!(
                        "dockerReference {r:?} contains neither a tag nor digest"
                    )));
                }
                SignedIdentity::ExactReference(r)
            }
            "exactRepository" => {
                let r = s("dockerRepository")?;
                Named::parse(&r)
                    .map_err(|e| Error::from(format!("invalid dockerRepository {r:?}: {e}")))?;
                SignedIdentity::ExactRepository(r)
            }
            _ => {
                let (prefix, signed_prefix) = (s("prefix")?, s("signedPrefix")?);
                for p in [&prefix, &signed_prefix] {
                    if !valid_remap_prefix(p) {
                        return Err(Error::from(format!(
                            "remapIdentity: prefix {p:?} is not valid"
                        )));
                    }
                }
                SignedIdentity::RemapIdentity {
                    prefix,
                    signed_prefix,
                }
            }
        })
    }
}

/// A host alone, or a normalized repository name that starts with a host: what `remapIdentity`
/// prefixes may be (no tag, no digest, no docker.io shorthand).
fn valid_remap_prefix(s: &str) -> bool {
    let host_ok = |h: &str| {
        let (name, port) = match h.rsplit_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (h, None),
        };
        port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            && !name.is_empty()
            && name.split('.').all(|c| {
                !c.is_empty()
                    && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !c.starts_with('-')
                    && !c.ends_with('-')
            })
    };
    match s.split_once('/') {
        None => host_ok(s),
        Some((host, path)) => {
            // The path's grammar, checked under a host that is surely one.
            host_ok(host)
                && imageref::parse(&format!("example.invalid/{path}"))
                    .is_ok_and(|n| n.tag.is_none() && n.digest.is_none() && n.path == path)
        }
    }
}

/// `intended` with `prefix` replaced by `signed_prefix` when its name starts with it (whole
/// components only); itself otherwise. `None` when the result is not a reference.
fn remap(intended: &Named, prefix: &str, signed_prefix: &str) -> Option<Named> {
    let name = &intended.name;
    let matches = name == prefix
        || (name.len() > prefix.len()
            && name.starts_with(prefix)
            && name.as_bytes()[prefix.len()] == b'/');
    if !matches {
        return Some(intended.clone());
    }
    let full = intended.full().replacen(prefix, signed_prefix, 1);
    let n = imageref::parse(&full).ok()?;
    // ParseNamed, not ParseNormalizedNamed: the rewritten name must be canonical already.
    let named = Named {
        name: format!("{}/{}", n.domain, n.path),
        tag: n.tag,
        digest: n.digest,
    };
    (named.full() == full).then_some(named)
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;
