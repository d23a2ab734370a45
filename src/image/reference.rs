//! Image references: `[registry[:port]/]repository[:tag][@sha256:digest]` with the docker
//! defaults (docker.io, `library/`, `latest`), and `oci:DIR[:TAG]` image-layout references.

use std::fmt;
use std::path::PathBuf;

use crate::imageref::{DOCKER_HUB, DOCKER_HUB_API};

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

/// An image reference that does not parse: the message quotes it and says why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReferenceError(String);

impl From<String> for ReferenceError {
    fn from(why: String) -> Self {
        ReferenceError(why)
    }
}

impl From<&str> for ReferenceError {
    fn from(why: &str) -> Self {
        ReferenceError(why.to_string())
    }
}

/// Parses `oci:DIR[:TAG]`, or a registry reference.
pub fn parse_source(s: &str) -> Result<ImageSource, ReferenceError> {
    match s.strip_prefix("oci:") {
        Some(rest) => parse_layout(rest)
            .map_err(|why| ReferenceError::from(format!("invalid reference {s:?}: {why}"))),
        None => parse(s).map(ImageSource::Registry),
    }
}

/// `DIR[:TAG]` as containers/image's `oci:` transport reads it on Linux (what skopeo and podman
/// do): the directory ends at the first colon, and what follows names the image, an
/// `org.opencontainers.image.ref.name` of [`valid_layout_name`]'s grammar. Where upstream reads
/// `DIR:` as no name and `DIR:@N` as the N-th entry of `index.json`, opreg refuses both: an
/// empty name is most likely a tag variable left empty, and images are picked by name only.
fn parse_layout(rest: &str) -> Result<ImageSource, ReferenceError> {
    let (dir, name) = match rest.split_once(':') {
        Some((dir, name)) => (dir, Some(name)),
        None => (rest, None),
    };
    if dir.is_empty() {
        return Err("no directory (oci:DIR[:TAG])".into());
    }
    match name {
        Some("") => Err("nothing after the colon: name a tag, or leave out the colon".into()),
        Some(n) if n.starts_with('@') => Err(ReferenceError::from(format!(
            "{n:?}: opreg picks an image of a layout by its tag, not by its index"
        ))),
        Some(n) if !valid_layout_name(n) => Err(ReferenceError::from(format!(
            "invalid tag {n:?}: letters, digits and the separators - . _ : @ + between them, in components joined by /"
        ))),
        _ => Ok(ImageSource::Layout {
            dir: dir.into(),
            tag: name.map(str::to_string),
        }),
    }
}

/// The image-spec's `org.opencontainers.image.ref.name` grammar, as containers/image checks it
/// (`ValidateImageName`): components joined by `/`, each runs of ASCII letters and digits
/// separated by one of `- . _ : @ +` or by `--`.
pub fn valid_layout_name(name: &str) -> bool {
    name.split('/').all(|component| {
        let b = component.as_bytes();
        let mut i = 0;
        loop {
            let start = i;
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            if i == start {
                return false;
            }
            if i == b.len() {
                return true;
            }
            i += if b[i..].starts_with(b"--") {
                2
            } else if b"-._:@+".contains(&b[i]) {
                1
            } else {
                return false;
            };
        }
    })
}

/// Parses a registry reference, applying the docker defaults. The grammar and the
/// normalization are [`crate::imageref::parse`]'s (the same check validation applies to pull
/// specs); this only adds the default tag.
pub fn parse(s: &str) -> Result<Reference, ReferenceError> {
    let bad = |why: &str| {
        Err(ReferenceError::from(format!(
            "invalid image reference {s:?}: {why}"
        )))
    };
    if s.is_empty() {
        return bad("empty");
    }
    let n = match crate::imageref::parse(s) {
        Ok(n) => n,
        Err(e) => return bad(&e.to_string()),
    };
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
    fn digests_of_each_known_algorithm_are_accepted() {
        for (alg, len) in [("sha256", 64), ("sha384", 96), ("sha512", 128)] {
            let d = format!("{alg}:{}", "b".repeat(len));
            let r = parse(&format!("quay.io/a/b@{d}")).unwrap();
            assert_eq!(r.digest.as_deref(), Some(d.as_str()));
            assert!(parse(&format!("quay.io/a/b@{alg}:{}", "b".repeat(len - 2))).is_err());
        }
        assert!(parse(&format!("quay.io/a/b@md5:{}", "b".repeat(32))).is_err());
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

    fn layout(s: &str) -> Result<(String, Option<String>), ReferenceError> {
        match parse_source(s)? {
            ImageSource::Layout { dir, tag } => Ok((dir.to_string_lossy().to_string(), tag)),
            ImageSource::Registry(r) => panic!("{s}: read as the registry reference {r}"),
        }
    }

    /// containers/image's cases for its `oci:` reference parser (oci/internal's split test and
    /// oci/layout's ParseReference test), same inputs, same verdicts; where opreg differs on
    /// purpose (an empty name, an index), the difference is spelled out.
    #[test]
    fn oci_references_as_containers_image_reads_them() {
        let tmp = std::env::temp_dir().to_string_lossy().to_string();
        for dir in [
            "/".to_string(),
            "/etc".into(),
            tmp.clone(),
            "relativepath".into(),
            format!("{tmp}/thisdoesnotexist"),
        ] {
            for (suffix, tag) in [
                (":notlatest:image", Some("notlatest:image")),
                (":latestimage", Some("latestimage")),
                ("", None),
            ] {
                let got = layout(&format!("oci:{dir}{suffix}"));
                assert_eq!(
                    got,
                    Ok((dir.clone(), tag.map(str::to_string))),
                    "{dir}{suffix}"
                );
            }
            // Upstream reads `DIR:` as no name and `DIR:@N` as an index; opreg refuses both.
            for suffix in [":", ":@0", ":@10", ":@999999"] {
                assert!(
                    layout(&format!("oci:{dir}{suffix}")).is_err(),
                    "{dir}{suffix}"
                );
            }
        }
        for (input, dir, tag) in [
            (
                "/foo/bar:busybox:latest",
                "/foo/bar",
                Some("busybox:latest"),
            ),
            ("/foo/bar:busybox", "/foo/bar", Some("busybox")),
            ("/foo/bar", "/foo/bar", None),
        ] {
            let want = Ok((dir.to_string(), tag.map(str::to_string)));
            assert_eq!(layout(&format!("oci:{input}")), want, "{input}");
        }
        for bad in [
            format!("oci:{tmp}:invalid'image!value@"),
            format!("oci:{tmp}:@-3"),
            "oci:tt:bad tag".into(),
            "oci:tt:".into(),
            "oci::v1".into(),
            "oci:".into(),
        ] {
            let e = layout(&bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
        // A directory with a colon cannot be named: the first colon ends it.
        assert_eq!(
            layout("oci:tt:a/b"),
            Ok(("tt".to_string(), Some("a/b".to_string())))
        );
    }

    #[test]
    fn layout_names() {
        for ok in [
            "v1",
            "a/b",
            "notlatest:image",
            "notlatest@1",
            "a--b",
            "A.b_c-d+e@f:g",
            "1.0/x",
        ] {
            assert!(valid_layout_name(ok), "{ok}");
        }
        for bad in [
            "", "-a", "a-", "a---b", "a-.b", "a//b", "/a", "a/", "bad tag", "a\nb", "é", ".",
        ] {
            assert!(!valid_layout_name(bad), "{bad}");
        }
    }
}
