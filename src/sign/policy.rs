//! containers-policy.json (containers-policy.json(5)), read as containers/image reads it, and the
//! verdict on one image.
//!
//! A policy has a `default` requirement list and per-transport scopes; opreg pulls from
//! registries (the `docker` transport) and OCI layouts (`oci`). For a registry image the
//! scopes tried are, in order, the image itself (`repo:tag`, or `repo@digest` for a pull by
//! digest), its repository, each namespace above it, the host, the host's `*.` wildcards, the
//! transport's `""`; then `default`. The first scope present decides, and every requirement of
//! its list must hold.
//!
//! Requirements read: `insecureAcceptAnything`, `reject`, and `sigstoreSigned` with public
//! keys (`keyPath`, `keyPaths`, `keyData`, `keyDatas`) and any `signedIdentity`. `signedBy`
//! (GPG), `signedBaseLayer`, and `sigstoreSigned` with `fulcio`, `pki` or `rekorPublicKey*`
//! are refused when the policy is read, never accepted silently.

use super::identity::{Named, SignedIdentity};
use super::{keys, payload, Error};
use base64::Engine;
use p256::ecdsa::VerifyingKey;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// One requirement.
#[derive(Clone, Debug)]
pub enum Requirement {
    InsecureAcceptAnything,
    Reject,
    SigstoreSigned {
        keys: Vec<VerifyingKey>,
        identity: SignedIdentity,
    },
}

/// A parsed policy.
#[derive(Clone, Debug)]
pub struct Policy {
    default: Vec<Requirement>,
    /// `transports.docker`, by scope.
    docker: BTreeMap<String, Vec<Requirement>>,
    oci_default: Option<Vec<Requirement>>,
}

/// What is being pulled.
pub enum Subject<'a> {
    Registry(&'a Named),
    /// An OCI layout: its transport's `""` scope, else `default`.
    Layout,
}

/// A signature as found next to an image.
#[derive(Clone, Debug)]
pub struct Found {
    pub payload: Vec<u8>,
    /// The base64 signature of the layer annotation.
    pub signature: String,
}

/// The signatures of an image.
pub enum Signatures {
    Found(Vec<Found>),
    /// None, at the tag named.
    Unsigned {
        tag: String,
    },
    /// No tag-based signature, but a sigstore bundle referrer.
    BundleOnly,
}

impl Policy {
    /// Reads the policy file at `path`. The error is one line naming the file.
    pub fn load(path: &Path) -> Result<Policy, Error> {
        let bytes = keys::read_small_file(path, 4 << 20)
            .map_err(|e| Error::from(format!("signature policy {e}")))?;
        Policy::from_bytes(&bytes)
            .map_err(|e| Error::from(format!("signature policy {}: {e}", path.display())))
    }

    /// Parses a policy's bytes (key files named by `keyPath` are read here).
    pub fn from_bytes(bytes: &[u8]) -> Result<Policy, Error> {
        let v = super::strict_json::parse(bytes)
            .map_err(|e| Error::from(format!("not valid JSON: {e}")))?;
        let top = v
            .as_object()
            .ok_or_else(|| Error::from("not a JSON object"))?;
        if let Some(k) = top.keys().find(|k| *k != "default" && *k != "transports") {
            return Err(Error::from(format!("unknown key {k:?}")));
        }
        let default = requirements(top.get("default").ok_or("the default policy is missing")?)
            .map_err(|e| Error::from(format!("default: {e}")))?;
        let mut docker = BTreeMap::new();
        let mut oci_default = None;
        if let Some(t) = top.get("transports") {
            let t = t
                .as_object()
                .ok_or_else(|| Error::from("transports is not a JSON object"))?;
            for (transport, scopes) in t {
                let scopes = scopes.as_object().ok_or_else(|| {
                    Error::from(format!("transports.{transport} is not a JSON object"))
                })?;
                for (scope, reqs) in scopes {
                    let r = requirements(reqs).map_err(|e| {
                        Error::from(format!("transports.{transport}[{scope:?}]: {e}"))
                    })?;
                    match transport.as_str() {
                        "docker" => {
                            docker.insert(scope.clone(), r);
                        }
                        "oci" if scope.is_empty() => oci_default = Some(r),
                        _ => {}
                    }
                }
            }
        }
        Ok(Policy {
            default,
            docker,
            oci_default,
        })
    }

    /// The scope that decides for `subject`, and its requirements.
    pub fn requirements_for(&self, subject: &Subject) -> (String, &[Requirement]) {
        let named = match subject {
            Subject::Layout => {
                return match &self.oci_default {
                    Some(r) => ("transports.oci[\"\"]".into(), r),
                    None => ("default".into(), &self.default),
                }
            }
            Subject::Registry(n) => n,
        };
        let mut tried = vec![named.identity()];
        tried.extend(named.namespaces());
        tried.push(String::new());
        for scope in tried {
            if let Some(r) = self.docker.get(&scope) {
                return (format!("transports.docker[{scope:?}]"), r);
            }
        }
        ("default".into(), &self.default)
    }

    /// True when `subject` needs no signature read: every requirement that decides is
    /// `insecureAcceptAnything` or `reject`.
    pub fn needs_signatures(&self, subject: &Subject) -> bool {
        self.requirements_for(subject)
            .1
            .iter()
            .any(|r| matches!(r, Requirement::SigstoreSigned { .. }))
    }

    /// The verdict on `subject`, whose manifest digest is `digest`. `signatures` is called at
    /// most once, and only when a requirement needs them. The error is the reason, one line.
    pub fn check(
        &self,
        subject: &Subject,
        digest: &str,
        signatures: &mut dyn FnMut() -> Result<Signatures, Error>,
    ) -> Result<(), Error> {
        let (scope, reqs) = self.requirements_for(subject);
        let mut fetched: Option<Signatures> = None;
        for r in reqs {
            match r {
                Requirement::InsecureAcceptAnything => {}
                Requirement::Reject => {
                    return Err(Error::from(format!(
                        "rejected by the signature policy ({scope})"
                    )))
                }
                Requirement::SigstoreSigned { keys, identity } => {
                    if fetched.is_none() {
                        fetched = Some(signatures()?);
                    }
                    let intended = match subject {
                        Subject::Registry(n) => Some(*n),
                        Subject::Layout => None,
                    };
                    accepted(
                        fetched.as_ref().unwrap(),
                        keys,
                        "the policy's keys",
                        identity,
                        intended,
                        digest,
                    )
                    .map_err(|e| Error::from(format!("{e} ({scope} requires sigstoreSigned)")))?;
                }
            }
        }
        Ok(())
    }
}

/// Whether one of `sigs` is by one of `keys` (named in the error as `keys_named`, e.g. "the
/// given key"), for `digest`, with a claimed identity `identity` accepts for `intended`: what
/// `image verify` asks, with no policy file involved.
pub fn signed_by(
    sigs: &Signatures,
    keys: &[VerifyingKey],
    keys_named: &str,
    identity: &SignedIdentity,
    intended: &Named,
    digest: &str,
) -> Result<(), Error> {
    accepted(sigs, keys, keys_named, identity, Some(intended), digest)
}

/// Whether one of `sigs` is by one of `keys`, for `digest`, with an identity `identity`
/// accepts for `intended`.
fn accepted(
    sigs: &Signatures,
    keys: &[VerifyingKey],
    keys_named: &str,
    identity: &SignedIdentity,
    intended: Option<&Named>,
    digest: &str,
) -> Result<(), Error> {
    let found = match sigs {
        Signatures::Found(f) if !f.is_empty() => f,
        Signatures::Found(_) => return Err("unsigned: no signature".into()),
        Signatures::Unsigned { tag } => return Err(Error::from(format!("unsigned: no signature at tag {tag}"))),
        Signatures::BundleOnly => {
            return Err("signed in sigstore's new bundle format (an OCI 1.1 referrer), which opreg does not read yet; sign with cosign's --new-bundle-format=false".into())
        }
    };
    let Some(intended) = intended else {
        return Err("unsigned: an OCI layout holds no signatures opreg reads".into());
    };
    // The most telling reason among the signatures tried.
    let mut best: (u8, String) = (0, format!("no signature verifies with {keys_named}"));
    for f in found {
        let verified = base64::engine::general_purpose::STANDARD
            .decode(f.signature.trim())
            .ok()
            .is_some_and(|der| keys.iter().any(|k| keys::verify(k, &f.payload, &der)));
        if !verified {
            continue;
        }
        let claims = match payload::parse_payload(&f.payload) {
            Ok(c) => c,
            Err(e) => {
                best = best.max((1, format!("a signature's payload is invalid: {e}")));
                continue;
            }
        };
        if claims.digest != digest {
            best = best.max((
                2,
                format!("the signature is for another digest ({})", claims.digest),
            ));
            continue;
        }
        if !identity.matches(intended, &claims.docker_reference) {
            best = best.max((
                3,
                format!(
                    "the signature's identity {:?} does not match {} under {}",
                    claims.docker_reference,
                    intended.full(),
                    identity.name()
                ),
            ));
            continue;
        }
        return Ok(());
    }
    Err(Error::from(best.1))
}

impl SignedIdentity {
    /// The rule's name in the policy file.
    pub fn name(&self) -> &'static str {
        match self {
            SignedIdentity::MatchExact => "matchExact",
            SignedIdentity::MatchRepoDigestOrExact => "matchRepoDigestOrExact",
            SignedIdentity::MatchRepository => "matchRepository",
            SignedIdentity::ExactReference(_) => "exactReference",
            SignedIdentity::ExactRepository(_) => "exactRepository",
            SignedIdentity::RemapIdentity { .. } => "remapIdentity",
        }
    }
}

/// A non-empty list of requirements.
fn requirements(v: &Value) -> Result<Vec<Requirement>, Error> {
    let list = v
        .as_array()
        .ok_or_else(|| Error::from("not a list of requirements"))?;
    if list.is_empty() {
        return Err("the list of requirements must not be empty".into());
    }
    list.iter().map(requirement).collect()
}

fn requirement(v: &Value) -> Result<Requirement, Error> {
    let o = v
        .as_object()
        .ok_or_else(|| Error::from("a requirement is not a JSON object"))?;
    let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
    let only_type = |r: Requirement| match o.keys().find(|k| *k != "type") {
        Some(k) => Err(Error::from(format!("{kind}: unknown key {k:?}"))),
        None => Ok(r),
    };
    match kind {
        "insecureAcceptAnything" => only_type(Requirement::InsecureAcceptAnything),
        "reject" => only_type(Requirement::Reject),
        "sigstoreSigned" => sigstore_signed(o),
        "signedBy" => Err("signedBy (GPG signatures) is not supported yet".into()),
        "signedBaseLayer" => Err("signedBaseLayer is not supported yet".into()),
        _ => Err(Error::from(format!("unknown requirement type {kind:?}"))),
    }
}

fn sigstore_signed(o: &Map<String, Value>) -> Result<Requirement, Error> {
    const KNOWN: [&str; 6] = [
        "type",
        "keyPath",
        "keyPaths",
        "keyData",
        "keyDatas",
        "signedIdentity",
    ];
    for k in o.keys() {
        match k.as_str() {
            "fulcio"
            | "pki"
            | "rekorPublicKeyPath"
            | "rekorPublicKeyPaths"
            | "rekorPublicKeyData"
            | "rekorPublicKeyDatas" => {
                return Err(Error::from(format!(
                    "sigstoreSigned with {k} is not supported yet"
                )))
            }
            k if KNOWN.contains(&k) => {}
            k => return Err(Error::from(format!("sigstoreSigned: unknown key {k:?}"))),
        }
    }
    let sources = ["keyPath", "keyPaths", "keyData", "keyDatas"]
        .iter()
        .filter(|k| o.contains_key(**k))
        .count();
    if sources != 1 {
        return Err(
            "sigstoreSigned needs exactly one of keyPath, keyPaths, keyData and keyDatas".into(),
        );
    }
    let string = |v: &Value, what: &str| -> Result<String, Error> {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| Error::from(format!("sigstoreSigned: {what} is not a string")))
    };
    let list = |k: &str| -> Result<Vec<String>, Error> {
        let a = o[k]
            .as_array()
            .ok_or_else(|| Error::from(format!("sigstoreSigned: {k} is not a list")))?;
        if a.is_empty() {
            return Err(Error::from(format!(
                "sigstoreSigned: {k} must not be empty"
            )));
        }
        a.iter().map(|v| string(v, k)).collect()
    };
    let from_file = |p: &str| -> Result<VerifyingKey, Error> {
        let bytes = keys::read_small_file(Path::new(p), 1 << 20)
            .map_err(|e| Error::from(format!("keyPath {e}")))?;
        keys::parse_public_key(&bytes).map_err(|e| Error::from(format!("keyPath {p}: {e}")))
    };
    let from_data = |d: &str| -> Result<VerifyingKey, Error> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(d)
            .map_err(|e| Error::from(format!("keyData is not base64: {e}")))?;
        keys::parse_public_key(&bytes).map_err(|e| Error::from(format!("keyData: {e}")))
    };
    let keys = if let Some(p) = o.get("keyPath") {
        vec![from_file(&string(p, "keyPath")?)?]
    } else if o.contains_key("keyPaths") {
        list("keyPaths")?
            .iter()
            .map(|p| from_file(p))
            .collect::<Result<_, _>>()?
    } else if let Some(d) = o.get("keyData") {
        vec![from_data(&string(d, "keyData")?)?]
    } else {
        list("keyDatas")?
            .iter()
            .map(|d| from_data(d))
            .collect::<Result<_, _>>()?
    };
    let identity = match o.get("signedIdentity") {
        Some(v) => SignedIdentity::from_json(v)?,
        None => SignedIdentity::MatchRepoDigestOrExact,
    };
    Ok(Requirement::SigstoreSigned { keys, identity })
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
