//! Image kinds, told apart by image config labels as `opm` does: a catalog image names its FBC
//! directory, a legacy index image its SQLite file, a bundle image its manifests and metadata
//! directories. The labels are checked in opm's order: catalog, then bundle, then index.

use std::collections::BTreeMap;

pub const CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";
pub const DATABASE_LABEL: &str = "operators.operatorframework.io.index.database.v1";
pub const MEDIATYPE_LABEL: &str = "operators.operatorframework.io.bundle.mediatype.v1";
pub const MANIFESTS_LABEL: &str = "operators.operatorframework.io.bundle.manifests.v1";
pub const METADATA_LABEL: &str = "operators.operatorframework.io.bundle.metadata.v1";
pub const PACKAGE_LABEL: &str = "operators.operatorframework.io.bundle.package.v1";
pub const CHANNELS_LABEL: &str = "operators.operatorframework.io.bundle.channels.v1";
pub const DEFAULT_CHANNEL_LABEL: &str = "operators.operatorframework.io.bundle.channel.default.v1";

/// What an image holds, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageKind {
    /// A file-based catalog directory.
    Catalog { configs: String },
    /// An operator-registry SQLite database file.
    Index { database: String },
    /// A registry+v1 bundle: its manifests and metadata directories.
    Bundle { manifests: String, metadata: String },
}

impl ImageKind {
    pub fn name(&self) -> &'static str {
        match self {
            ImageKind::Catalog { .. } => "catalog",
            ImageKind::Index { .. } => "index",
            ImageKind::Bundle { .. } => "bundle",
        }
    }

    /// The image paths to extract.
    pub fn paths(&self) -> Vec<String> {
        match self {
            ImageKind::Catalog { configs } => vec![configs.clone()],
            ImageKind::Index { database } => vec![database.clone()],
            ImageKind::Bundle {
                manifests,
                metadata,
            } => vec![manifests.clone(), metadata.clone()],
        }
    }
}

/// Why an image's labels say no kind opreg reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KindError(String);

impl From<String> for KindError {
    fn from(why: String) -> Self {
        KindError(why)
    }
}

impl From<&str> for KindError {
    fn from(why: &str) -> Self {
        KindError(why.to_string())
    }
}

/// The kind of an image from its config labels.
pub fn classify(labels: &BTreeMap<String, String>) -> Result<ImageKind, KindError> {
    let get = |k: &str| labels.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    if let Some(c) = get(CONFIGS_LABEL) {
        return Ok(ImageKind::Catalog {
            configs: c.to_string(),
        });
    }
    if get(PACKAGE_LABEL).is_some() || get(MEDIATYPE_LABEL).is_some() {
        // opm takes the package label alone for a bundle image and never reads the media type
        // label; registry+v1 is the only format, so a missing one means it.
        if let Some(other) = get(MEDIATYPE_LABEL).filter(|m| *m != "registry+v1") {
            return Err(KindError::from(format!(
                "bundle media type {other:?} is not supported (only registry+v1)"
            )));
        }
        if get(PACKAGE_LABEL).is_none() {
            return Err(KindError::from(format!(
                "bundle image without the {PACKAGE_LABEL} label"
            )));
        }
        return Ok(ImageKind::Bundle {
            manifests: get(MANIFESTS_LABEL).unwrap_or("manifests/").to_string(),
            metadata: get(METADATA_LABEL).unwrap_or("metadata/").to_string(),
        });
    }
    if let Some(d) = get(DATABASE_LABEL) {
        return Ok(ImageKind::Index {
            database: d.to_string(),
        });
    }
    Err(
        "not a catalog, index or bundle image (it has none of the operator-framework labels)"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn classifies_like_opm() {
        assert_eq!(
            classify(&labels(&[
                (CONFIGS_LABEL, "/configs"),
                (DATABASE_LABEL, "/db")
            ]))
            .unwrap(),
            ImageKind::Catalog {
                configs: "/configs".into()
            }
        );
        assert_eq!(
            classify(&labels(&[(DATABASE_LABEL, "/database/index.db")]))
                .unwrap()
                .name(),
            "index"
        );
        let b = classify(&labels(&[
            (MEDIATYPE_LABEL, "registry+v1"),
            (PACKAGE_LABEL, "etcd"),
            (MANIFESTS_LABEL, "manifests/"),
            (METADATA_LABEL, "metadata/"),
        ]))
        .unwrap();
        assert_eq!(
            b.paths(),
            vec!["manifests/".to_string(), "metadata/".to_string()]
        );
        assert!(classify(&labels(&[(MEDIATYPE_LABEL, "helm"), (PACKAGE_LABEL, "x")])).is_err());
        // The package label alone is a registry+v1 bundle at the default paths, as in opm.
        assert_eq!(
            classify(&labels(&[(PACKAGE_LABEL, "foo")])).unwrap(),
            ImageKind::Bundle {
                manifests: "manifests/".into(),
                metadata: "metadata/".into()
            }
        );
        let e = classify(&labels(&[(MEDIATYPE_LABEL, "registry+v1")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains(PACKAGE_LABEL), "{e}");
        let e = classify(&labels(&[("maintainer", "me")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a catalog, index or bundle image"));
    }
}
