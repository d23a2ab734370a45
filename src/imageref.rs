//! Image pull specs: the docker reference grammar, checked the way upstream checks a bundle's
//! `image` and every `relatedImages[].image` (containers/image `reference.ParseNormalizedNamed`
//! with go-digest's algorithm table), with upstream's error texts.
//!
//! A leaf module: it depends on nothing else in the crate, so that the image source can reuse it.
//!
//! Grammar (the distribution/reference grammar; `|` alternatives, `*` repetition):
//!
//! ```text
//! reference        := name [ ":" tag ] [ "@" digest ]
//! name             := [ domain "/" ] path                      (at most 255 bytes)
//! domain           := host [ ":" port ]
//! host             := domain-name | "[" [0-9A-Fa-f:]+ "]"
//! domain-name      := domain-component ( "." domain-component )*
//! domain-component := [A-Za-z0-9] | [A-Za-z0-9] [A-Za-z0-9-]* [A-Za-z0-9]
//! port             := [0-9]+
//! path             := path-component ( "/" path-component )*
//! path-component   := alnum ( separator alnum )*
//! alnum            := [a-z0-9]+
//! separator        := "." | "_" | "__" | "-"+
//! tag              := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
//! digest           := algorithm ":" [0-9A-Fa-f]{32,}
//! algorithm        := alg-component ( [+._-] alg-component )*
//! alg-component    := [A-Za-z] [A-Za-z0-9]*
//! ```
//!
//! Normalization before matching: a first path component without `.` or `:` that is not
//! `localhost` is not a domain (`docker.io` is put in front, and `library/` before a single
//! component); the repository part must be lower case. After matching, the digest must use an
//! algorithm go-digest knows (`sha256`, `sha384`, `sha512`) with exactly its hex length, in
//! lower case. So `@ssha256:…` and `@md5:…` are unsupported algorithms, and spaces or upper
//! case in the repository are invalid references.

/// Longest name (domain and path) a reference may have.
const NAME_MAX: usize = 255;

/// A reference split into its parts, after docker.io normalization (`docker.io` for a name
/// without a domain or with `index.docker.io`, `library/` before a single path component).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalized {
    /// Registry host, with its port if any.
    pub domain: String,
    /// The repository path below the domain.
    pub path: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

/// Why a pull spec is refused: upstream's text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidReference(String);

impl From<String> for InvalidReference {
    fn from(why: String) -> Self {
        InvalidReference(why)
    }
}

impl From<&str> for InvalidReference {
    fn from(why: &str) -> Self {
        InvalidReference(why.to_string())
    }
}

/// Checks a pull spec; the error is upstream's text (without the `invalid image pull spec`
/// prefix, which the caller adds with the field name).
pub fn check(spec: &str) -> Result<(), InvalidReference> {
    parse(spec).map(|_| ())
}

/// Checks a pull spec and splits it (see [`Normalized`]); errors as [`check`].
pub fn parse(spec: &str) -> Result<Normalized, InvalidReference> {
    if spec.len() == 64 && spec.bytes().all(|c| matches!(c, b'a'..=b'f' | b'0'..=b'9')) {
        return Err(format!(
            "invalid repository name ({spec}), cannot specify 64-byte hexadecimal strings"
        )
        .into());
    }
    let (domain, remainder) = split_domain(spec);
    let remote = remainder.split(':').next().unwrap_or("");
    if remote.to_lowercase() != remote {
        return Err(UPPERCASE.into());
    }
    let full = format!("{domain}/{remainder}");
    let (name, tag, digest) = match_reference(&full).ok_or_else(|| {
        if match_reference(&full.to_lowercase()).is_some() {
            UPPERCASE.to_string()
        } else {
            "invalid reference format".to_string()
        }
    })?;
    if name.len() > NAME_MAX {
        return Err(format!("repository name must not be more than {NAME_MAX} characters").into());
    }
    if let Some(d) = digest {
        // go-digest's `Digest.Validate`, in its words.
        crate::digest::parse(d).map_err(|e| e.to_string())?;
    }
    Ok(Normalized {
        path: name[domain.len() + 1..].to_string(),
        domain,
        tag: tag.map(str::to_string),
        digest: digest.map(str::to_string),
    })
}

const UPPERCASE: &str = "invalid reference format: repository name must be lowercase";

/// Docker Hub's canonical name, and every name it goes by: that, the legacy name a reference
/// may give, and the host its registry API is served from (docker config `auths` keys use all
/// three).
pub const DOCKER_HUB: &str = "docker.io";
pub const DOCKER_HUB_NAMES: [&str; 3] = [DOCKER_HUB, DOCKER_HUB_LEGACY, DOCKER_HUB_API];
/// The legacy name of Docker Hub, which go-containerregistry (so cosign) still writes.
pub const DOCKER_HUB_LEGACY: &str = "index.docker.io";
/// The host Docker Hub's registry API is served from.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// docker.io normalization, the one place it is written (docker's `ParseNormalizedNamed`): a
/// reference without a domain, or with the legacy `index.docker.io`, names `docker.io`, and a
/// one-component path there is in `library/`. Returns the domain and the path.
pub fn normalize_docker_hub(domain: Option<&str>, path: &str) -> (String, String) {
    let domain = match domain {
        None => DOCKER_HUB,
        Some(d) if d == DOCKER_HUB_NAMES[1] => DOCKER_HUB,
        Some(d) => d,
    };
    let path = if domain == DOCKER_HUB && !path.contains('/') {
        format!("library/{path}")
    } else {
        path.to_string()
    };
    (domain.to_string(), path)
}

/// The domain the reference names and the rest, after docker.io normalization.
fn split_domain(s: &str) -> (String, String) {
    match s.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => {
            normalize_docker_hub(Some(first), rest)
        }
        _ => normalize_docker_hub(None, s),
    }
}

/// Matches `s` against `reference`; returns the name, the tag and the digest.
fn match_reference(s: &str) -> Option<(&str, Option<&str>, Option<&str>)> {
    let (name_tag, digest) = match s.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (s, None),
    };
    if let Some(d) = digest {
        if !digest_syntax(d) {
            return None;
        }
    }
    let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_tag[last_slash..].rfind(':') {
        Some(i) => (
            &name_tag[..last_slash + i],
            Some(&name_tag[last_slash + i + 1..]),
        ),
        None => (name_tag, None),
    };
    if tag.is_some_and(|t| !tag_ok(t)) {
        return None;
    }
    let name_ok = path_ok(name)
        || name
            .split_once('/')
            .is_some_and(|(d, p)| domain_ok(d) && path_ok(p));
    name_ok.then_some((name, tag, digest))
}

fn tag_ok(t: &str) -> bool {
    let b = t.as_bytes();
    let word = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
    !b.is_empty()
        && b.len() <= 128
        && word(&b[0])
        && b[1..].iter().all(|c| word(c) || *c == b'.' || *c == b'-')
}

fn domain_ok(d: &str) -> bool {
    let (host, port) = match d.rsplit_once(':') {
        // A ':' inside brackets belongs to an IPv6 address, not a port.
        Some((h, p)) if !p.contains(']') => (h, Some(p)),
        _ => (d, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit())) {
        return false;
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return !v6.is_empty() && v6.bytes().all(|c| c.is_ascii_hexdigit() || c == b':');
    }
    host.split('.').all(|c| {
        let b = c.as_bytes();
        !b.is_empty()
            && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    })
}

fn path_ok(p: &str) -> bool {
    p.split('/').all(component_ok)
}

fn component_ok(c: &str) -> bool {
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    let b = c.as_bytes();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-')) {
            return false;
        }
    }
    true
}

/// `digest` of the grammar.
fn digest_syntax(d: &str) -> bool {
    let Some((alg, hex)) = d.split_once(':') else {
        return false;
    };
    let alg_ok = alg.split(['+', '.', '_', '-']).all(|c| {
        let b = c.as_bytes();
        !b.is_empty() && b[0].is_ascii_alphabetic() && b.iter().all(u8::is_ascii_alphanumeric)
    });
    alg_ok && hex.len() >= 32 && hex.bytes().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn accepts_what_docker_accepts() {
        let sha = "0".repeat(64);
        for ok in [
            "bar",
            "foo-bundle:v0.1.0",
            "quay.io/operator-framework/foo-bundle:v0.1.0",
            "localhost:5000/a/b:1",
            "[::1]:5000/a",
            "Quay.IO/a/b",
            "my_host.com/foo",
            "a__b/c---d.e_f",
            &format!("quay.io/a/b@sha256:{sha}"),
            &format!("quay.io/a/b:v1@sha256:{sha}"),
            &format!("a@sha512:{}", "ab".repeat(64)),
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn rejects_with_upstreams_words() {
        let cases = [
            ("quay.io/Foo/bar", "repository name must be lowercase"),
            ("Foo/bar", "repository name must be lowercase"),
            ("quay.io/foo bar", "invalid reference format"),
            ("quay.io/foo/", "invalid reference format"),
            ("a___b", "invalid reference format"),
            ("a:", "invalid reference format"),
            ("a@sha256:abcd", "invalid reference format"),
            (
                &format!("a@ssha256:{}", "ab".repeat(36)),
                "unsupported digest algorithm",
            ),
            (
                &format!("a@md5:{}", "ab".repeat(16)),
                "unsupported digest algorithm",
            ),
            (
                &format!("a@sha256:{}", "ab".repeat(20)),
                "invalid checksum digest length",
            ),
            (
                &format!("a@sha256:{}", "AB".repeat(32)),
                "invalid checksum digest format",
            ),
            (
                &"a".repeat(64),
                "cannot specify 64-byte hexadecimal strings",
            ),
            (&"a".repeat(300), "must not be more than 255 characters"),
        ];
        for (spec, want) in cases {
            let got = check(spec).expect_err(spec);
            assert!(got.to_string().contains(want), "{spec}: {got}");
        }
    }
}
