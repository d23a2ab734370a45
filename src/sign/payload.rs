//! cosign's tag-based signatures, as data: the simple-signing payload, and the OCI manifest
//! that holds one layer per signature under the tag `sha256-<hex>.sig` of the signed image's
//! repository (the format podman, CRI-O and OpenShift verify; cosign's legacy format).
//!
//! The payload is the JSON cosign writes: `critical` holds the identity (`docker-reference`, the
//! repository without tag or digest), the manifest digest and the type; `optional` is `null`.
//! The signature is ECDSA-SHA256 over the payload's bytes exactly as stored, base64 in the layer
//! annotation `dev.cosignproject.cosign/signature`. Reading is as strict as containers/image's:
//! exactly the fields above in `critical`, a known type, a well-formed digest.

use super::Error;
use serde::Serialize;
use serde_json::Value;

/// A signature layer's media type.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The payload's `critical.type`.
pub const SIGNATURE_TYPE: &str = "cosign container image signature";
/// sigstore's bundle media types start so (cosign's new format, an OCI 1.1 referrer).
pub const BUNDLE_MEDIA_TYPE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";

/// The tag holding the signatures of the manifest `digest` (`sha256:HEX` → `sha256-HEX.sig`).
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", crate::digest::tag_form(digest))
}

#[derive(Serialize)]
struct Payload<'a> {
    critical: Critical<'a>,
    optional: Option<()>,
}

#[derive(Serialize)]
struct Critical<'a> {
    identity: Identity<'a>,
    image: Image<'a>,
    #[serde(rename = "type")]
    kind: &'a str,
}

#[derive(Serialize)]
struct Identity<'a> {
    #[serde(rename = "docker-reference")]
    docker_reference: &'a str,
}

#[derive(Serialize)]
struct Image<'a> {
    #[serde(rename = "docker-manifest-digest")]
    digest: &'a str,
}

/// The payload cosign signs for `digest` in `repository` (`registry/path`, no tag or digest).
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&Payload {
        critical: Critical {
            identity: Identity {
                docker_reference: repository,
            },
            image: Image { digest },
            kind: SIGNATURE_TYPE,
        },
        optional: None,
    })
    .unwrap_or_default()
}

/// What a payload claims, not yet trusted beyond its signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub docker_reference: String,
    pub digest: String,
}

/// An object with exactly `fields`, in any order.
fn exact<'a>(
    v: &'a Value,
    fields: &[&str],
    what: &str,
) -> Result<&'a serde_json::Map<String, Value>, Error> {
    let o = v
        .as_object()
        .ok_or_else(|| Error::from(format!("{what} is not a JSON object")))?;
    for k in o.keys() {
        if !fields.contains(&k.as_str()) {
            return Err(Error::from(format!("{what} has an unknown field {k:?}")));
        }
    }
    for f in fields {
        if !o.contains_key(*f) {
            return Err(Error::from(format!("{what} lacks the field {f:?}")));
        }
    }
    Ok(o)
}

fn string<'a>(
    o: &'a serde_json::Map<String, Value>,
    k: &str,
    what: &str,
) -> Result<&'a str, Error> {
    o[k].as_str()
        .ok_or_else(|| Error::from(format!("{what}.{k} is not a string")))
}

/// Reads a payload as containers/image does: exactly `critical` and `optional` at the top,
/// exactly `type`, `image` and `identity` in `critical`, the cosign type, a valid digest.
pub fn parse_payload(bytes: &[u8]) -> Result<Claims, Error> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::from(format!("the payload is not JSON: {e}")))?;
    let top = exact(&v, &["critical", "optional"], "the payload")?;
    if !top["optional"].is_null() && !top["optional"].is_object() {
        return Err("the payload's optional is neither null nor an object".into());
    }
    let critical = exact(&top["critical"], &["type", "image", "identity"], "critical")?;
    let kind = string(critical, "type", "critical")?;
    if kind != SIGNATURE_TYPE {
        return Err(Error::from(format!("unknown signature type {kind:?}")));
    }
    let image = exact(
        &critical["image"],
        &["docker-manifest-digest"],
        "critical.image",
    )?;
    let digest = string(image, "docker-manifest-digest", "critical.image")?;
    if !crate::digest::is_valid(digest) {
        return Err(format!("invalid docker-manifest-digest {digest:?}").into());
    }
    let identity = exact(
        &critical["identity"],
        &["docker-reference"],
        "critical.identity",
    )?;
    let reference = string(identity, "docker-reference", "critical.identity")?;
    Ok(Claims {
        docker_reference: reference.to_string(),
        digest: digest.to_string(),
    })
}

/// One signature layer of a signature manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub digest: String,
    pub size: u64,
    /// The base64 signature, as in the annotation.
    pub signature: String,
}

/// The signature layers of a `.sig` manifest, in order; layers of other media types, or
/// without the annotation, are left out (cosign's certificates and bundles ride along too).
pub fn signature_layers(manifest: &[u8]) -> Result<Vec<Layer>, Error> {
    let v: Value = serde_json::from_slice(manifest)
        .map_err(|e| Error::from(format!("the signature manifest is not JSON: {e}")))?;
    let layers = v
        .get("layers")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::from("the signature manifest has no layers"))?;
    let mut out = Vec::new();
    for l in layers {
        if l.get("mediaType").and_then(Value::as_str) != Some(SIMPLE_SIGNING) {
            continue;
        }
        let (Some(digest), Some(size), Some(sig)) = (
            l.get("digest").and_then(Value::as_str),
            l.get("size").and_then(Value::as_u64),
            l.pointer("/annotations/dev.cosignproject.cosign~1signature")
                .and_then(Value::as_str),
        ) else {
            continue;
        };
        out.push(Layer {
            digest: digest.to_string(),
            size,
            signature: sig.to_string(),
        });
    }
    Ok(out)
}

/// A signature manifest and its config blob, for `layers` (the existing ones and the new).
pub struct Built {
    pub manifest: Vec<u8>,
    pub config: Vec<u8>,
    pub config_digest: String,
}

/// The config cosign pushes with signatures (go-containerregistry's empty image with the
/// layers appended: their digests as diff IDs, one empty history entry each), and the OCI
/// manifest over it. Layers already there keep their other annotations as found in `existing`.
pub fn build_manifest(existing: Option<&[u8]>, new: &Layer) -> Result<Built, Error> {
    let mut layers: Vec<Value> = match existing {
        Some(m) => serde_json::from_slice::<Value>(m)
            .ok()
            .and_then(|v| v.get("layers").and_then(Value::as_array).cloned())
            .ok_or_else(|| Error::from("the existing signature manifest has no layers"))?,
        None => Vec::new(),
    };
    layers.push(serde_json::json!({
        "mediaType": SIMPLE_SIGNING,
        "size": new.size,
        "digest": new.digest,
        "annotations": { SIGNATURE_ANNOTATION: new.signature },
    }));
    let diff_ids: Vec<Value> = layers
        .iter()
        .map(|l| l.get("digest").cloned().unwrap_or(Value::Null))
        .collect();
    let history: Vec<Value> = layers
        .iter()
        .map(|_| serde_json::json!({"created": "0001-01-01T00:00:00Z"}))
        .collect();
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": history,
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "config": {},
    }))
    .map_err(|e| e.to_string())?;
    let config_digest = crate::digest::sha256(&config);
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "size": config.len(), "digest": config_digest},
        "layers": layers,
    }))
    .map_err(|e| Error::from(e.to_string()))?;
    Ok(Built {
        manifest,
        config,
        config_digest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_cosigns() {
        let d = format!("sha256:{}", "a".repeat(64));
        let p = payload("example.com/ns/cat", &d);
        assert_eq!(
            String::from_utf8(p.clone()).unwrap(),
            format!("{{\"critical\":{{\"identity\":{{\"docker-reference\":\"example.com/ns/cat\"}},\"image\":{{\"docker-manifest-digest\":\"{d}\"}},\"type\":\"cosign container image signature\"}},\"optional\":null}}")
        );
        let c = parse_payload(&p).unwrap();
        assert_eq!(c.docker_reference, "example.com/ns/cat");
        assert_eq!(signature_tag(&d), format!("sha256-{}.sig", "a".repeat(64)));
    }

    #[test]
    fn payloads_are_read_strictly() {
        let d = format!("sha256:{}", "a".repeat(64));
        let ok = |s: &str| parse_payload(s.as_bytes());
        let body = format!("\"identity\":{{\"docker-reference\":\"r\"}},\"image\":{{\"docker-manifest-digest\":\"{d}\"}},\"type\":\"cosign container image signature\"");
        assert!(ok(&format!(
            "{{\"critical\":{{{body}}},\"optional\":{{\"creator\":\"x\"}}}}"
        ))
        .is_ok());
        assert!(ok(&format!("{{\"critical\":{{{body}}}}}")).is_err());
        assert!(ok(&format!(
            "{{\"critical\":{{{body},\"extra\":1}},\"optional\":null}}"
        ))
        .is_err());
        assert!(ok(&format!(
            "{{\"critical\":{{{body}}},\"optional\":null,\"x\":1}}"
        ))
        .is_err());
        assert!(ok(&format!(
            "{{\"critical\":{{{}}},\"optional\":null}}",
            body.replace("cosign container", "atomic container")
        ))
        .is_err());
        assert!(ok(&format!(
            "{{\"critical\":{{{}}},\"optional\":null}}",
            body.replace(&d, "sha256:abc")
        ))
        .is_err());
        assert!(ok("[]").is_err());
        // Each algorithm go-digest knows, at its length.
        for (alg, len) in [("sha384", 96), ("sha512", 128)] {
            let other = format!("{alg}:{}", "c".repeat(len));
            let wrap = |b: String| format!("{{\"critical\":{{{b}}},\"optional\":null}}");
            assert!(ok(&wrap(body.replace(&d, &other))).is_ok(), "{alg}");
            let short = format!("{alg}:{}", "c".repeat(64));
            assert!(ok(&wrap(body.replace(&d, &short))).is_err(), "{alg}");
        }
    }

    #[test]
    fn signing_again_appends_a_layer() {
        let l = |n: &str| Layer {
            digest: format!("sha256:{}", n.repeat(64)),
            size: 10,
            signature: format!("sig{n}"),
        };
        let one = build_manifest(None, &l("a")).unwrap();
        let two = build_manifest(Some(&one.manifest), &l("b")).unwrap();
        let layers = signature_layers(&two.manifest).unwrap();
        assert_eq!(layers, vec![l("a"), l("b")]);
        let config: Value = serde_json::from_slice(&two.config).unwrap();
        assert_eq!(config["rootfs"]["diff_ids"].as_array().unwrap().len(), 2);
    }
}
