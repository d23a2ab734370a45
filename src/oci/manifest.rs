//! Manifests, image indexes and image configs: OCI and Docker schema 2 media types, platform
//! selection in an index (manifest list), and the config's labels.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

/// True for the four manifest and index media types.
pub fn is_manifest_type(t: &str) -> bool {
    matches!(t, OCI_MANIFEST | OCI_INDEX | DOCKER_MANIFEST | DOCKER_LIST)
}

/// The `Accept` header for manifest requests.
pub const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// A content descriptor, read and written. (Fields in the order of their JSON names, so that a
/// written document has sorted keys, as the builder's reproducible bytes have always had.)
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    pub digest: String,
    #[serde(default)]
    pub media_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// Bytes; a negative size does not parse.
    pub size: u64,
}

/// An OCI image manifest, as the image builder writes it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    pub media_type: String,
    pub schema_version: u32,
}

/// An OCI image index, as the image builder writes it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageIndex {
    pub manifests: Vec<Descriptor>,
    pub media_type: String,
    pub schema_version: u32,
}

/// An OS/architecture[/variant] triple.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct Platform {
    #[serde(default)]
    pub architecture: String,
    #[serde(default)]
    pub os: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

/// linux and the architecture this binary was built for, in Go's names.
pub fn host_platform() -> Platform {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "arm" => "arm",
        "powerpc64" => "ppc64le",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        other => other,
    };
    Platform {
        os: "linux".into(),
        architecture: arch.into(),
        variant: None,
    }
}

/// Why bytes are not a manifest, an index, an image config or a platform opreg reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FormatError(String);

impl From<String> for FormatError {
    fn from(why: String) -> Self {
        FormatError(why)
    }
}

impl From<&str> for FormatError {
    fn from(why: &str) -> Self {
        FormatError(why.to_string())
    }
}

/// Parses `OS/ARCH[/VARIANT]`.
pub fn parse_platform(s: &str) -> Result<Platform, FormatError> {
    let parts: Vec<&str> = s.split('/').collect();
    match parts.as_slice() {
        [os, arch] if !os.is_empty() && !arch.is_empty() => Ok(Platform {
            os: os.to_string(),
            architecture: arch.to_string(),
            variant: None,
        }),
        [os, arch, v] if !os.is_empty() && !arch.is_empty() && !v.is_empty() => Ok(Platform {
            os: os.to_string(),
            architecture: arch.to_string(),
            variant: Some(v.to_string()),
        }),
        _ => Err(format!("invalid platform {s:?}: expected OS/ARCH[/VARIANT]").into()),
    }
}

/// A parsed manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Manifest {
    Image {
        config: Descriptor,
        layers: Vec<Descriptor>,
    },
    Index {
        manifests: Vec<Descriptor>,
    },
}

/// The distinct blobs (configs and layers) of image manifests, by digest and size, sorted;
/// `None` when one of them is an index (an index nested in an index).
pub fn blobs_of(images: Vec<Manifest>) -> Option<Vec<(String, u64)>> {
    let mut blobs = Vec::new();
    for m in images {
        let Manifest::Image { config, layers } = m else {
            return None;
        };
        blobs.extend(
            std::iter::once(config)
                .chain(layers)
                .map(|d| (d.digest, d.size)),
        );
    }
    blobs.sort();
    blobs.dedup();
    Some(blobs)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    #[serde(default)]
    schema_version: Option<i64>,
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Option<Vec<Descriptor>>,
    #[serde(default)]
    manifests: Option<Vec<Descriptor>>,
}

/// Parses a manifest or index. `content_type` is the registry's `Content-Type` (or the
/// referring descriptor's media type), used when the document has no `mediaType`.
pub fn parse_manifest(bytes: &[u8], content_type: Option<&str>) -> Result<Manifest, FormatError> {
    let raw: Raw = serde_json::from_slice(bytes).map_err(|e| format!("malformed manifest: {e}"))?;
    if raw.schema_version == Some(1) {
        return Err("Docker schema 1 manifests are not supported".into());
    }
    let media_type = raw
        .media_type
        .clone()
        .filter(|m| !m.is_empty())
        .or_else(|| content_type.map(|c| c.split(';').next().unwrap_or("").trim().to_string()))
        .unwrap_or_default();
    let is_index = match media_type.as_str() {
        OCI_INDEX | DOCKER_LIST => true,
        OCI_MANIFEST | DOCKER_MANIFEST => false,
        // No usable media type: tell them apart by shape.
        _ if raw.manifests.is_some() && raw.layers.is_none() => true,
        _ if raw.config.is_some() => false,
        other => return Err(format!("unsupported manifest media type {other:?}").into()),
    };
    let check = |d: &Descriptor| -> Result<(), FormatError> {
        if !crate::digest::is_valid(&d.digest) {
            return Err(format!("unsupported or malformed digest {:?}", d.digest).into());
        }
        Ok(())
    };
    if is_index {
        let manifests = raw.manifests.ok_or("an index without manifests")?;
        manifests.iter().try_for_each(check)?;
        Ok(Manifest::Index { manifests })
    } else {
        let config = raw.config.ok_or("an image manifest without config")?;
        let layers = raw.layers.unwrap_or_default();
        check(&config)?;
        layers.iter().try_for_each(check)?;
        Ok(Manifest::Image { config, layers })
    }
}

/// The index entry for `want`: os and architecture must match; a wanted variant must match,
/// and with none wanted an entry without a variant is preferred (`arm64` and `arm64/v8` are
/// the same platform).
pub fn select<'a>(manifests: &'a [Descriptor], want: &Platform) -> Option<&'a Descriptor> {
    let normalized = |p: &Platform| -> (String, String, String) {
        let v = p.variant.clone().unwrap_or_default();
        let v = if p.architecture == "arm64" && v == "v8" {
            String::new()
        } else {
            v
        };
        (p.os.clone(), p.architecture.clone(), v)
    };
    let (os, arch, variant) = normalized(want);
    let candidates: Vec<&Descriptor> = manifests
        .iter()
        .filter(|d| {
            d.platform.as_ref().is_some_and(|p| {
                let (o, a, _) = normalized(p);
                o == os && a == arch
            })
        })
        .collect();
    if want.variant.is_some() {
        candidates
            .into_iter()
            .find(|d| normalized(d.platform.as_ref().unwrap()).2 == variant)
    } else {
        candidates
            .iter()
            .find(|d| normalized(d.platform.as_ref().unwrap()).2.is_empty())
            .or(candidates.first())
            .copied()
    }
}

/// The platforms an index offers, for error messages.
pub fn platforms(manifests: &[Descriptor]) -> String {
    let v: Vec<String> = manifests
        .iter()
        .filter_map(|d| d.platform.as_ref().map(|p| p.to_string()))
        .collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// The labels of an image config (`config.Labels`).
pub fn config_labels(bytes: &[u8]) -> Result<BTreeMap<String, String>, FormatError> {
    let v: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("malformed image config: {e}"))?;
    let mut out = BTreeMap::new();
    if let Some(labels) = v
        .get("config")
        .and_then(|c| c.get("Labels"))
        .and_then(|l| l.as_object())
    {
        for (k, v) in labels {
            if let Some(s) = v.as_str() {
                out.insert(k.clone(), s.to_string());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(arch: &str, variant: Option<&str>) -> Descriptor {
        Descriptor {
            media_type: OCI_MANIFEST.into(),
            digest: format!("sha256:{}", "0".repeat(64)),
            size: 1,
            platform: Some(Platform {
                os: "linux".into(),
                architecture: arch.into(),
                variant: variant.map(Into::into),
            }),
            annotations: Default::default(),
        }
    }

    #[test]
    fn selects_platform() {
        let idx = vec![
            d("amd64", None),
            d("arm", Some("v7")),
            d("arm64", Some("v8")),
        ];
        let want = |s| parse_platform(s).unwrap();
        assert_eq!(select(&idx, &want("linux/amd64")), Some(&idx[0]));
        assert_eq!(select(&idx, &want("linux/arm64")), Some(&idx[2]));
        assert_eq!(select(&idx, &want("linux/arm/v7")), Some(&idx[1]));
        assert_eq!(select(&idx, &want("linux/arm/v6")), None);
        assert_eq!(select(&idx, &want("windows/amd64")), None);
        assert!(parse_platform("linux").is_err());
    }

    #[test]
    fn parses_docker_and_oci() {
        let z = format!("sha256:{}", "0".repeat(64));
        let m = format!(
            r#"{{"schemaVersion":2,"mediaType":"{DOCKER_MANIFEST}","config":{{"mediaType":"x","digest":"{z}","size":2}},"layers":[{{"mediaType":"y","digest":"{z}","size":3}}]}}"#
        );
        assert!(
            matches!(parse_manifest(m.as_bytes(), None).unwrap(), Manifest::Image { layers, .. } if layers.len() == 1)
        );
        let i = format!(r#"{{"schemaVersion":2,"manifests":[{{"digest":"{z}","size":2}}]}}"#);
        assert!(matches!(
            parse_manifest(i.as_bytes(), Some(OCI_INDEX)).unwrap(),
            Manifest::Index { .. }
        ));
        assert!(parse_manifest(br#"{"schemaVersion":1}"#, None).is_err());
        assert!(parse_manifest(b"[]", None).is_err());
    }
}
