//! Registry credentials and auth challenges.
//!
//! Credentials come from the first of these files that has an entry for the registry:
//! `$REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`, `$DOCKER_CONFIG/config.json`,
//! `~/.docker/config.json`, all in docker config format (`auths.HOST.auth` = base64
//! `user:password`, or `identitytoken`). A credential's `Debug` never shows the secret, and
//! nothing here logs one.

use base64::Engine;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What to present to a registry.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    Basic {
        user: String,
        password: String,
    },
    /// An OAuth2 refresh token (`identitytoken`), exchanged at the token endpoint.
    IdentityToken {
        user: String,
        token: String,
    },
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Basic { user, .. } => write!(f, "Basic({user:?}, <redacted>)"),
            Credential::IdentityToken { user, .. } => {
                write!(f, "IdentityToken({user:?}, <redacted>)")
            }
        }
    }
}

impl Credential {
    /// The `Authorization: Basic` value for user and password (the identity token's user goes
    /// with the token when a registry asks for basic auth anyway).
    pub fn basic_header(&self) -> String {
        let (u, p) = match self {
            Credential::Basic { user, password } => (user, password),
            Credential::IdentityToken { user, token } => (user, token),
        };
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
        )
    }
}

/// The auth files to consult, in order.
pub fn auth_files() -> Vec<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut out = Vec::new();
    if let Some(f) = env("REGISTRY_AUTH_FILE") {
        out.push(f);
    }
    if let Some(d) = env("XDG_RUNTIME_DIR") {
        out.push(d.join("containers/auth.json"));
    }
    if let Some(d) = env("DOCKER_CONFIG") {
        out.push(d.join("config.json"));
    }
    if let Some(h) = env("HOME") {
        out.push(h.join(".docker/config.json"));
    }
    out
}

/// Where to say credentials were looked for, when none were found: each auth file consulted,
/// `$REGISTRY_AUTH_FILE` by its path, and those that do not exist said so.
pub fn searched() -> String {
    let named = std::env::var_os("REGISTRY_AUTH_FILE").filter(|v| !v.is_empty());
    let files: Vec<String> = auth_files()
        .iter()
        .map(|f| {
            let var = named.as_deref() == Some(f.as_os_str());
            let missing = !f.exists();
            match (var, missing) {
                (true, true) => format!("{} (REGISTRY_AUTH_FILE; it does not exist)", f.display()),
                (true, false) => format!("{} (REGISTRY_AUTH_FILE)", f.display()),
                (false, true) => format!("{} (does not exist)", f.display()),
                (false, false) => f.display().to_string(),
            }
        })
        .collect();
    match files.is_empty() {
        true => {
            "no auth file (REGISTRY_AUTH_FILE, XDG_RUNTIME_DIR, DOCKER_CONFIG and HOME are unset)"
                .into()
        }
        false => files.join(", "),
    }
}

/// A credential and the auth file it came from.
#[derive(Clone, Debug)]
pub struct Found {
    pub credential: Credential,
    pub file: PathBuf,
}

/// Looks up the credential for `registry` (and `repository`, for per-repository entries) in
/// the auth files. A file that does not exist is skipped; one that cannot be read or is not a
/// valid auth file is an error naming it (never its contents), as podman refuses it.
pub fn lookup(registry: &str, repository: &str) -> anyhow::Result<Option<Found>> {
    for f in auth_files() {
        let text = match std::fs::read_to_string(&f) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => anyhow::bail!("auth file {}: cannot read it: {e}", f.display()),
        };
        match find_in_config(&text, registry, repository) {
            Ok(Some(c)) => {
                tracing::debug!(file = %f.display(), registry, "using credentials from auth file");
                return Ok(Some(Found {
                    credential: c,
                    file: f,
                }));
            }
            Ok(None) => {}
            Err(e) => anyhow::bail!("auth file {} is malformed: {e}", f.display()),
        }
    }
    Ok(None)
}

/// Access was refused while answering an authentication challenge: no credentials for a
/// registry that wants them, credentials or anonymous access refused by the token service, or
/// a challenge opreg cannot answer. Told apart from other failures by its type (the image
/// checks report it as denied, never as missing or as a network failure).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unauthorized: {0}")]
pub struct Unauthorized(pub String);

/// Whether `e`, or what caused it, is an [`Unauthorized`].
pub fn is_unauthorized(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<Unauthorized>())
}

/// Why an auth file's text is not a docker config opreg can use (never its contents).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MalformedAuth(String);

/// The most specific `auths` entry of a docker config for `registry/repository`.
pub fn find_in_config(
    text: &str,
    registry: &str,
    repository: &str,
) -> Result<Option<Credential>, MalformedAuth> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| MalformedAuth(format!("not JSON: {e}")))?;
    let Some(auths) = v.get("auths").and_then(|a| a.as_object()) else {
        return Ok(None);
    };
    let mut by_key = BTreeMap::new();
    for (k, entry) in auths {
        by_key.insert(normalize_key(k), entry);
    }
    let hosts: Vec<&str> = if registry == crate::imageref::DOCKER_HUB {
        crate::imageref::DOCKER_HUB_NAMES.to_vec()
    } else {
        vec![registry]
    };
    for host in hosts {
        // registry/a/b/c, registry/a/b, registry/a, registry
        let mut candidates = Vec::new();
        let mut path = format!("{host}/{repository}");
        loop {
            candidates.push(path.clone());
            match path.rfind('/') {
                Some(i) => path.truncate(i),
                None => break,
            }
        }
        for c in candidates {
            if let Some(entry) = by_key.get(&c) {
                if let Some(cred) = decode_entry(entry)? {
                    return Ok(Some(cred));
                }
            }
        }
    }
    Ok(None)
}

fn normalize_key(k: &str) -> String {
    let k = k
        .strip_prefix("https://")
        .or_else(|| k.strip_prefix("http://"))
        .unwrap_or(k);
    let k = k.trim_end_matches('/');
    let k = k
        .strip_suffix("/v1")
        .or_else(|| k.strip_suffix("/v2"))
        .unwrap_or(k);
    k.to_string()
}

fn decode_entry(entry: &serde_json::Value) -> Result<Option<Credential>, MalformedAuth> {
    let bad = |why: &str| MalformedAuth(why.to_string());
    let s = |k: &str| entry.get(k).and_then(|v| v.as_str()).unwrap_or("");
    let (mut user, mut password) = (s("username").to_string(), s("password").to_string());
    if !s("auth").is_empty() {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(s("auth").trim())
            .map_err(|_| bad("an auth entry is not base64"))?;
        let text = String::from_utf8(raw).map_err(|_| bad("an auth entry is not UTF-8"))?;
        let (u, p) = text
            .split_once(':')
            .ok_or_else(|| bad("an auth entry is not user:password"))?;
        user = u.to_string();
        password = p.to_string();
    }
    if !s("identitytoken").is_empty() {
        return Ok(Some(Credential::IdentityToken {
            user,
            token: s("identitytoken").to_string(),
        }));
    }
    if user.is_empty() && password.is_empty() {
        return Ok(None);
    }
    Ok(Some(Credential::Basic { user, password }))
}

/// One challenge of a `WWW-Authenticate` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    /// Lower-cased scheme: `basic`, `bearer`, ...
    pub scheme: String,
    /// Parameters, keys lower-cased.
    pub params: BTreeMap<String, String>,
}

/// Parses a `WWW-Authenticate` header value into its challenges (RFC 7235: `Scheme k=v,
/// k="quoted, \"v\""`, several challenges separated by commas). Never panics; malformed
/// parts are skipped.
pub fn parse_challenges(header: &str) -> Vec<Challenge> {
    let mut out: Vec<Challenge> = Vec::new();
    let b = header.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t' || b[*i] == b',') {
            *i += 1;
        }
    };
    let token = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && !matches!(b[*i], b' ' | b'\t' | b',' | b'=' | b'"') {
            *i += 1;
        }
        header[start..*i].to_string()
    };
    while i < b.len() {
        skip_ws(&mut i);
        if i >= b.len() {
            break;
        }
        let word = token(&mut i);
        if word.is_empty() {
            i += 1;
            continue;
        }
        // A word followed by '=' is a parameter of the current challenge; otherwise it starts one.
        let mut j = i;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        if j < b.len() && b[j] == b'=' && !out.is_empty() {
            i = j + 1;
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
            let value = if i < b.len() && b[i] == b'"' {
                i += 1;
                let mut v = String::new();
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    }
                    // Push whole UTF-8 characters.
                    let ch = header[i..].chars().next().unwrap_or('\u{fffd}');
                    v.push(ch);
                    i += ch.len_utf8();
                }
                i += 1;
                v
            } else {
                token(&mut i)
            };
            if let Some(c) = out.last_mut() {
                c.params.insert(word.to_ascii_lowercase(), value);
            }
        } else if j < b.len() && b[j] == b'=' {
            // A parameter before any scheme (or a token68): skip it.
            i = j + 1;
            let _ = token(&mut i);
        } else {
            out.push(Challenge {
                scheme: word.to_ascii_lowercase(),
                params: BTreeMap::new(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_access_is_told_by_its_type_not_its_text() {
        let refused = anyhow::Error::new(Unauthorized("the token service refused".into()));
        assert!(is_unauthorized(&refused));
        assert!(is_unauthorized(&refused.context("GET /v2/a/manifests/b")));
        assert!(!is_unauthorized(&anyhow::anyhow!(
            "unauthorized: a look-alike"
        )));
    }

    #[test]
    fn parses_bearer_and_basic_challenges() {
        let c = parse_challenges(
            r#"Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].scheme, "bearer");
        assert_eq!(c[0].params["realm"], "https://auth.example/token");
        assert_eq!(c[0].params["scope"], "repository:a/b:pull,push");
        let c = parse_challenges(r#"Basic realm="test", Bearer realm=x"#);
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].scheme.as_str(), c[1].params["realm"].as_str()),
            ("basic", "x")
        );
        assert!(parse_challenges("").is_empty());
        assert_eq!(
            parse_challenges(r#"Bearer realm="unterminated"#)[0].params["realm"],
            "unterminated"
        );
    }

    #[test]
    fn finds_most_specific_entry_and_redacts() {
        let enc = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let cfg = serde_json::json!({"auths": {
            "https://reg.example:5000/v1/": {"auth": enc("u:p")},
            "reg.example:5000/team/app": {"auth": enc("team:secret")},
            "https://index.docker.io/v1/": {"identitytoken": "tok", "auth": enc("<token>:")}
        }})
        .to_string();
        let c = find_in_config(&cfg, "reg.example:5000", "team/app")
            .unwrap()
            .unwrap();
        assert_eq!(
            c,
            Credential::Basic {
                user: "team".into(),
                password: "secret".into()
            }
        );
        assert!(!format!("{c:?}").contains("secret"));
        let c = find_in_config(&cfg, "reg.example:5000", "other/x")
            .unwrap()
            .unwrap();
        assert_eq!(c.basic_header(), format!("Basic {}", enc("u:p")));
        let c = find_in_config(&cfg, "docker.io", "library/busybox")
            .unwrap()
            .unwrap();
        assert!(matches!(c, Credential::IdentityToken { ref token, .. } if token == "tok"));
        assert_eq!(find_in_config(&cfg, "quay.io", "a/b").unwrap(), None);
    }
}
