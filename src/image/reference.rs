//! Image references: `[registry[:port]/]repository[:tag][@sha256:digest]` with the docker
//! defaults (docker.io, `library/`, `latest`), and `oci:DIR[:TAG]` image-layout references.

use std::fmt;
use std::path::PathBuf;

/// The registry docker.io names, and the host its API is served from.
pub const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// A parsed registry reference. `given` keeps the text as the user wrote it: it is what a
/// rendered bundle's `image` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    pub given: String,
    /// Registry host, with its port if any (`docker.io` for Docker Hub).
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

/// Where an image comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageSource {
    Registry(Reference),
    /// An OCI image-layout directory and the `org.opencontainers.image.ref.name` to pick.
    Layout {
        dir: PathBuf,
        tag: Option<String>,
    },
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.given)
    }
}

impl Reference {
    /// The manifest reference to ask the registry for: the digest if given, else the tag.
    pub fn manifest_ref(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// The host serving the registry API.
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }
}

/// Parses `oci:DIR[:TAG]`, or a registry reference.
pub fn parse_source(s: &str) -> Result<ImageSource, String> {
    if let Some(rest) = s.strip_prefix("oci:") {
        if rest.is_empty() {
            return Err("oci: needs a directory (oci:DIR[:TAG])".into());
        }
        // The directory itself may hold a colon: prefer the whole text when it exists.
        if std::path::Path::new(rest).is_dir() {
            return Ok(ImageSource::Layout {
                dir: rest.into(),
                tag: None,
            });
        }
        return Ok(match rest.rsplit_once(':') {
            Some((dir, tag)) if !tag.is_empty() && !tag.contains('/') => ImageSource::Layout {
                dir: dir.into(),
                tag: Some(tag.to_string()),
            },
            _ => ImageSource::Layout {
                dir: rest.into(),
                tag: None,
            },
        });
    }
    parse(s).map(ImageSource::Registry)
}

/// Parses a registry reference, applying the docker defaults. The grammar and the
/// normalization are [`crate::imageref::parse`]'s (the same check validation applies to pull
/// specs); this only adds the default tag and opreg's sha256-only rule.
pub fn parse(s: &str) -> Result<Reference, String> {
    let bad = |why: &str| Err(format!("invalid image reference {s:?}: {why}"));
    if s.is_empty() {
        return bad("empty");
    }
    let n = match crate::imageref::parse(s) {
        Ok(n) => n,
        Err(e) => return bad(&e),
    };
    if let Some(d) = &n.digest {
        if !is_digest(d) {
            return bad("opreg pulls by sha256 digest only (sha256: and 64 lowercase hex digits)");
        }
    }
    Ok(Reference {
        given: s.to_string(),
        registry: n.domain,
        repository: n.path,
        tag: match (n.tag, &n.digest) {
            (Some(t), _) => Some(t),
            (None, None) => Some("latest".into()),
            (None, Some(_)) => None,
        },
        digest: n.digest,
    })
}

/// `sha256:` and 64 lowercase hex digits.
pub fn is_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_defaults() {
        let r = parse("busybox").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("docker.io", "library/busybox", Some("latest"))
        );
        assert_eq!(r.api_host(), "registry-1.docker.io");
        let r = parse("index.docker.io/busybox:1").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("docker.io", "library/busybox", Some("1"))
        );
        let r = parse("org/cat:v1").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str()),
            ("docker.io", "org/cat")
        );
    }

    #[test]
    fn registry_port_tag_digest() {
        let d = format!("sha256:{}", "a".repeat(64));
        let r = parse(&format!("127.0.0.1:5000/org/cat:v4.18@{d}")).unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "org/cat");
        assert_eq!(r.tag.as_deref(), Some("v4.18"));
        assert_eq!(r.manifest_ref(), d);
        let r = parse("localhost/x").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.tag.as_deref()),
            ("localhost", Some("latest"))
        );
        let r = parse(&format!("quay.io/a/b@{d}")).unwrap();
        assert_eq!(r.tag, None);
    }

    #[test]
    fn rejects_bad_references() {
        for s in [
            "",
            "UPPER/case",
            "a:",
            "quay.io/a/b@sha256:12",
            "a//b",
            "-x",
            "a:.bad",
        ] {
            assert!(parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn oci_layouts() {
        assert_eq!(
            parse_source("oci:/no/such/dir:v1").unwrap(),
            ImageSource::Layout {
                dir: "/no/such/dir".into(),
                tag: Some("v1".into())
            }
        );
        assert_eq!(
            parse_source("oci:rel").unwrap(),
            ImageSource::Layout {
                dir: "rel".into(),
                tag: None
            }
        );
    }
}
