//! Signatures in registries: reading cosign's tag-based signatures of an image, applying a
//! signature policy ([`crate::sign::policy`]) to an image being pulled, and signing an image
//! (a signature layer appended to the manifest at `sha256-<hex>.sig`).
//!
//! Checking an image costs one manifest GET for its signature tag and one blob GET per
//! signature tried; nothing when the deciding scope needs no signature. Only when that tag is
//! missing are the OCI 1.1 referrers asked, to tell an image signed in sigstore's new bundle
//! format from an unsigned one.

use super::reference::{ImageSource, Reference};
use crate::oci::manifest;
use crate::registry::upload;
use crate::registry::{read_limited, BlobSource, Connection, Registry};
use crate::sign::identity::{Named, SignedIdentity};
use crate::sign::keys;
use crate::sign::payload::{self, Layer, BUNDLE_MEDIA_TYPE_PREFIX};
use crate::sign::policy::{Found, Policy, Signatures, Subject};
use anyhow::{anyhow, bail, Result};
use base64::Engine;
use p256::ecdsa::{SigningKey, VerifyingKey};
use std::path::Path;
use std::sync::Arc;

/// The largest signature payload read.
const MAX_PAYLOAD: u64 = 1 << 20;

/// A signature policy to apply to every image pulled, with the reference it is pulled by.
#[derive(Clone)]
pub struct Check {
    pub policy: Arc<Policy>,
    /// The image's reference; `None` for an OCI layout.
    pub named: Option<Named>,
    /// The reference as given, for messages.
    pub given: String,
    pub max_manifest: u64,
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Check({})", self.given)
    }
}

/// The policy named by `--signature-policy` (or `OPREG_SIGNATURE_POLICY`), read once; `None`
/// when neither names one.
pub fn load_policy(path: Option<&Path>) -> Result<Option<Arc<Policy>>> {
    match path {
        Some(p) => Policy::load(p)
            .map(|p| Some(Arc::new(p)))
            .map_err(|e| anyhow!(e)),
        None => Ok(None),
    }
}

/// The check of `--signature-policy FILE` for one image (`None` without a policy).
pub fn check_for(
    source: &ImageSource,
    given: &str,
    policy: Option<&Path>,
    max_manifest: u64,
) -> Result<Option<Check>> {
    Ok(load_policy(policy)?.map(|policy| Check {
        policy,
        named: named_of(source),
        given: given.to_string(),
        max_manifest,
    }))
}

/// The reference a policy sees for an image source.
pub fn named_of(source: &ImageSource) -> Option<Named> {
    match source {
        ImageSource::Registry(r) => Some(Named {
            name: format!("{}/{}", r.registry, r.repository),
            // A pull by digest is by digest, whatever tag was written beside it.
            tag: if r.digest.is_some() {
                None
            } else {
                r.tag.clone()
            },
            digest: r.digest.clone(),
        }),
        ImageSource::Layout { .. } => None,
    }
}

impl Check {
    /// The verdict on the image whose top manifest has `digest`, reading its signatures from
    /// `src` when the policy needs them. The error names the image and the reason.
    pub fn run(&self, src: &mut dyn BlobSource, digest: &str) -> Result<()> {
        let subject = match &self.named {
            Some(n) => Subject::Registry(n),
            None => Subject::Layout,
        };
        let limit = self.max_manifest;
        self.policy
            .check(&subject, digest, &mut || match &self.named {
                Some(_) => read_signatures(src, digest, limit)
                    .map_err(|e| crate::sign::Error::from(format!("{e:#}"))),
                None => Ok(Signatures::Found(Vec::new())),
            })
            .map_err(|why| anyhow!("refused by the signature policy: {why}"))
    }
}

/// The tag-based signatures of `digest` in `src`'s repository.
pub fn read_signatures(src: &mut dyn BlobSource, digest: &str, limit: u64) -> Result<Signatures> {
    let tag = payload::signature_tag(digest);
    let Some(m) = src.manifest_if_any(&tag, limit)? else {
        return Ok(if has_bundle(src, digest, limit) {
            Signatures::BundleOnly
        } else {
            Signatures::Unsigned { tag }
        });
    };
    let layers = payload::signature_layers(&m.bytes).map_err(|e| anyhow!("{tag}: {e}"))?;
    let mut found = Vec::new();
    for l in layers {
        if l.size > MAX_PAYLOAD {
            continue;
        }
        let bytes = read_limited(src.blob(&l.digest)?, MAX_PAYLOAD, "signature payload")?;
        // A payload that is not the one named is no signature.
        if !crate::digest::matches(&l.digest, &bytes) {
            continue;
        }
        found.push(Found {
            payload: bytes,
            signature: l.signature,
        });
    }
    Ok(Signatures::Found(found))
}

/// True when an OCI 1.1 referrer of `digest` (the referrers API, or its fallback tag
/// `sha256-<hex>`) is a sigstore bundle.
fn has_bundle(src: &mut dyn BlobSource, digest: &str, limit: u64) -> bool {
    let is_bundle = |bytes: &[u8]| {
        serde_json::from_slice::<serde_json::Value>(bytes)
            .ok()
            .and_then(|v| v.get("manifests").and_then(|m| m.as_array()).cloned())
            .is_some_and(|ms| {
                ms.iter().any(|m| {
                    m.get("artifactType")
                        .and_then(|t| t.as_str())
                        .is_some_and(|t| t.starts_with(BUNDLE_MEDIA_TYPE_PREFIX))
                })
            })
    };
    if let Ok(Some(b)) = src.get_if_any(&format!("referrers/{digest}"), limit) {
        if is_bundle(&b) {
            return true;
        }
    }
    let fallback = crate::digest::tag_form(digest);
    matches!(src.manifest_if_any(&fallback, limit), Ok(Some(m)) if is_bundle(&m.bytes))
}

/// What signing did.
#[derive(Debug, Clone)]
pub struct Signed {
    pub digest: String,
    /// The tag the signature manifest was pushed to.
    pub tag: String,
    /// Signatures in that manifest now.
    pub signatures: usize,
    /// False when this very signature was there already.
    pub added: bool,
}

/// The identity cosign writes: the repository, without tag or digest (Docker Hub's as
/// go-containerregistry names it).
pub fn cosign_identity(r: &Reference) -> String {
    let host = if r.registry == crate::imageref::DOCKER_HUB {
        crate::imageref::DOCKER_HUB_LEGACY
    } else {
        &r.registry
    };
    format!("{host}/{}", r.repository)
}

fn sending() -> upload::Sending {
    upload::Sending {
        chunk_size: 16 << 20,
        retries: Default::default(),
    }
}

/// Signs the image `r` names (its digest now): uploads the payload, and pushes the signature
/// manifest with this signature appended to those already there.
pub fn sign(r: &Reference, key: &SigningKey, conn: &Connection, limit: u64) -> Result<Signed> {
    let mut reg = Registry::new(r, conn)?.for_push();
    let top = reg.manifest(r.manifest_ref(), limit)?;
    let digest = crate::digest::sha256(&top.bytes);
    sign_digest(&mut reg, r, &digest, key, limit)
}

/// Signs `digest` in `r`'s repository through `reg`.
pub fn sign_digest(
    reg: &mut Registry,
    r: &Reference,
    digest: &str,
    key: &SigningKey,
    limit: u64,
) -> Result<Signed> {
    let body = payload::payload(&cosign_identity(r), digest);
    let signature = base64::engine::general_purpose::STANDARD.encode(keys::sign(key, &body));
    let layer = Layer {
        digest: crate::digest::sha256(&body),
        size: body.len() as u64,
        signature,
    };
    let tag = payload::signature_tag(digest);
    let existing = reg.manifest_if_any(&tag, limit)?;
    let mut layers = match &existing {
        Some(m) => payload::signature_layers(&m.bytes).map_err(|e| anyhow!("{tag}: {e}"))?,
        None => Vec::new(),
    };
    if layers.contains(&layer) {
        return Ok(Signed {
            digest: digest.to_string(),
            tag,
            signatures: layers.len(),
            added: false,
        });
    }
    let built = payload::build_manifest(existing.as_ref().map(|m| m.bytes.as_slice()), &layer)
        .map_err(|e| anyhow!("{tag}: {e}"))?;
    let s = sending();
    for (d, bytes) in [
        (&layer.digest, &body),
        (&built.config_digest, &built.config),
    ] {
        let bytes = bytes.clone();
        upload::upload(reg, d, bytes.len() as u64, None, &s, &mut || {
            Ok(Box::new(std::io::Cursor::new(bytes.clone())))
        })?;
    }
    upload::put_manifest(reg, manifest::OCI_MANIFEST, &built.manifest, &tag, &s)?;
    layers.push(layer);
    Ok(Signed {
        digest: digest.to_string(),
        tag,
        signatures: layers.len(),
        added: true,
    })
}

/// What `image verify` found.
#[derive(Debug, Clone)]
pub struct Verified {
    pub digest: String,
    pub signatures: usize,
}

/// Checks that a signature by one of `keys` covers the digest `r` names now and names `r`'s
/// repository, or with `signed_repository`, that one (a signature made for the source of a
/// mirrored image names the source's repository). The error is the reason, one line.
pub fn verify(
    r: &Reference,
    keys: &[VerifyingKey],
    signed_repository: Option<&str>,
    conn: &Connection,
    limit: u64,
) -> Result<Verified> {
    let identity = match signed_repository {
        None => SignedIdentity::MatchRepository,
        Some(repo) => {
            let n = Named::parse(repo).map_err(|e| anyhow!("signed identity {repo:?}: {e}"))?;
            if !n.is_name_only() {
                bail!("signed identity {repo:?}: name a repository, without a tag or digest");
            }
            SignedIdentity::ExactRepository(repo.to_string())
        }
    };
    let mut reg = Registry::new(r, conn)?;
    let top = reg.manifest(r.manifest_ref(), limit)?;
    let digest = crate::digest::sha256(&top.bytes);
    let sigs = read_signatures(&mut reg, &digest, limit)?;
    let count = match &sigs {
        Signatures::Found(f) => f.len(),
        _ => 0,
    };
    let named = named_of(&ImageSource::Registry(r.clone()))
        .ok_or_else(|| anyhow!("not a registry image"))?;
    let keys_named = match keys.len() {
        1 => "the given key",
        _ => "the given keys",
    };
    crate::sign::policy::signed_by(&sigs, keys, keys_named, &identity, &named, &digest)
        .map_err(|e| anyhow!(e))?;
    Ok(Verified {
        digest,
        signatures: count,
    })
}

/// A registry reference for signing or verifying (not an OCI layout); the error is a usage
/// line.
pub fn registry_reference(s: &str) -> std::result::Result<Reference, NotARegistry> {
    match super::reference::parse_source(s).map_err(|e| NotARegistry(e.to_string()))? {
        ImageSource::Registry(r) => Ok(r),
        ImageSource::Layout { .. } => Err(NotARegistry(format!(
            "{s}: signatures live in registries; name the image as registry/repository[:tag|@digest]"
        ))),
    }
}

/// A reference that names no registry image to sign or verify: a usage line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotARegistry(String);

/// Signs the digest that was just pushed to `r` (after `image push` or `image build --push`).
pub fn sign_pushed(
    r: &Reference,
    digest: &str,
    key: &SigningKey,
    conn: &Connection,
    limit: u64,
) -> Result<Signed> {
    let mut reg = Registry::new(r, conn)?.for_push();
    sign_digest(&mut reg, r, digest, key, limit).map_err(|e| {
        anyhow!(
            "signing {} {digest}: {}",
            r.given,
            crate::text::one_line(&e)
        )
    })
}
