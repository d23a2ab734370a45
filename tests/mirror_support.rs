//! The mirror tests' source: a real `docker-registry` filled with a catalog image whose
//! bundles and related images are in it too (some multi-arch, some sharing layers, one with a
//! cosign-style `.sig` tag), and an `ImageSetConfiguration` selecting part of it.

use crate::registry_support::faults::{Faults, Rule};
use crate::registry_support::{sha, Entry, Image, Registry, CONFIGS};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// What was pushed to the source: reference (as the catalog names it) -> manifest digest.
#[allow(dead_code)] // `reg` keeps the registry running.
pub struct Source {
    pub reg: Registry,
    pub images: BTreeMap<String, String>,
    /// The `.sig` tag of the operator image's index, and its digest.
    pub signature: (String, String),
    /// The host every reference names: the registry's, or the relay's in front of it.
    pub host: String,
    pub relay: Option<Faults>,
}

/// A layer every image shares (a "base"), and one of each image's own.
fn image(own: &str, arch: &'static str) -> Image {
    Image::new(&[("name", own)])
        .arch(arch)
        .layer(&[Entry::File(
            "base/os-release".into(),
            b"ID=test\nshared base layer\n".repeat(200),
        )])
        .layer(&[Entry::File(
            format!("app/{own}"),
            own.repeat(50).into_bytes(),
        )])
}

fn bundle(
    package: &str,
    name: &str,
    version: &str,
    image: &str,
    extra: &[serde_json::Value],
) -> serde_json::Value {
    let mut props =
        vec![json!({"type": "olm.package", "value": {"packageName": package, "version": version}})];
    props.extend(extra.iter().cloned());
    json!({"schema": "olm.bundle", "name": name, "package": package, "image": image, "properties": props})
}

impl Source {
    /// The source registry, filled.
    pub fn start() -> Source {
        Source::start_with(None)
    }

    /// The source registry, filled, with every reference naming a relay in front of it that
    /// follows `rule`.
    pub fn start_with(rule: Option<Box<Rule>>) -> Source {
        let reg = Registry::http();
        let relay = rule.map(|r| Faults::start(reg.port, r));
        let host = match &relay {
            Some(f) => format!("127.0.0.1:{}", f.port),
            None => reg.host(),
        };
        let images = std::cell::RefCell::new(BTreeMap::new());
        let push = |repo: &str, tag: &str, img: Image| {
            let d = reg.push(repo, tag, &img);
            images
                .borrow_mut()
                .insert(format!("{host}/{repo}:{tag}"), d.clone());
            d
        };
        for v in ["1.0.0", "1.1.0", "1.2.0"] {
            push(
                "etcd/etcd-bundle",
                &format!("v{v}"),
                image(&format!("etcd-bundle-{v}"), "amd64"),
            );
        }
        push(
            "dep/dep-bundle",
            "v1.0.0",
            image("dep-bundle-1.0.0", "amd64"),
        );
        push(
            "dep/dep-bundle",
            "v1.1.0",
            image("dep-bundle-1.1.0", "amd64"),
        );
        push("other/other-bundle", "v1", image("other-bundle", "amd64"));
        push("tools/ubi", "9", image("ubi", "amd64"));
        push("blocked/thing", "1", image("thing", "amd64"));
        let (amd, arm) = (
            image("etcd-operator", "amd64"),
            image("etcd-operator", "arm64"),
        );
        let operator = reg.push_index(
            "etcd/etcd-operator",
            "v1",
            &[("linux", "amd64", &amd), ("linux", "arm64", &arm)],
        );
        images.borrow_mut().insert(
            format!("{host}/etcd/etcd-operator@{operator}"),
            operator.clone(),
        );
        // A cosign-style signature of the operator's index.
        let payload = json!({"critical": {"identity": {"docker-reference": format!("{host}/etcd/etcd-operator")},
            "image": {"docker-manifest-digest": operator}, "type": "cosign container image signature"}, "optional": null})
            .to_string();
        let config = b"{}".to_vec();
        reg.push_blob("etcd/etcd-operator", payload.as_bytes());
        reg.push_blob("etcd/etcd-operator", &config);
        let sig = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(&config), "size": config.len()},
            "layers": [{"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json", "digest": sha(payload.as_bytes()),
                "size": payload.len(), "annotations": {"dev.cosignproject.cosign/signature": "MEUCIQ=="}}]})
        .to_string();
        let sig_tag = format!("{}.sig", operator.replace(':', "-"));
        let sig_digest = reg.push_manifest(
            "etcd/etcd-operator",
            &sig_tag,
            "application/vnd.oci.image.manifest.v1+json",
            sig.as_bytes(),
        );
        let op_ref = format!("{host}/etcd/etcd-operator@{operator}");
        let bundle_by_digest = format!(
            "{host}/etcd/etcd-bundle@{}",
            images.borrow()[&format!("{host}/etcd/etcd-bundle:v1.2.0")]
        );
        let docs = vec![
            json!({"schema": "olm.package", "name": "etcd", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "name": "stable", "package": "etcd", "entries": [
                {"name": "etcd.v1.0.0"}, {"name": "etcd.v1.1.0", "replaces": "etcd.v1.0.0"},
                {"name": "etcd.v1.2.0", "replaces": "etcd.v1.1.0"}]}),
            bundle(
                "etcd",
                "etcd.v1.0.0",
                "1.0.0",
                &format!("{host}/etcd/etcd-bundle:v1.0.0"),
                &[],
            ),
            bundle(
                "etcd",
                "etcd.v1.1.0",
                "1.1.0",
                &format!("{host}/etcd/etcd-bundle:v1.1.0"),
                &[],
            ),
            bundle(
                "etcd",
                "etcd.v1.2.0",
                "1.2.0",
                &bundle_by_digest,
                &[
                    json!({"type": "olm.package.required", "value": {"packageName": "dep", "versionRange": ">=1.0.0"}}),
                ],
            ),
            json!({"schema": "olm.package", "name": "dep", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "name": "stable", "package": "dep", "entries": [
                {"name": "dep.v1.0.0"}, {"name": "dep.v1.1.0", "replaces": "dep.v1.0.0"}]}),
            bundle(
                "dep",
                "dep.v1.0.0",
                "1.0.0",
                &format!("{host}/dep/dep-bundle:v1.0.0"),
                &[],
            ),
            bundle(
                "dep",
                "dep.v1.1.0",
                "1.1.0",
                &format!("{host}/dep/dep-bundle:v1.1.0"),
                &[],
            ),
            json!({"schema": "olm.package", "name": "other", "defaultChannel": "alpha"}),
            json!({"schema": "olm.channel", "name": "alpha", "package": "other", "entries": [{"name": "other.v1.0.0"}]}),
            bundle(
                "other",
                "other.v1.0.0",
                "1.0.0",
                &format!("{host}/other/other-bundle:v1"),
                &[],
            ),
        ];
        let mut text = String::new();
        for mut d in docs {
            // The operator image is a related image of every etcd bundle.
            if d["schema"] == "olm.bundle" && d["package"] == "etcd" {
                d["relatedImages"] = json!([{"name": "operator", "image": op_ref}]);
            }
            text.push_str(&d.to_string());
            text.push('\n');
        }
        let catalog = Image::new(&[(CONFIGS, "/configs")]).layer(&[
            Entry::Dir("configs".into()),
            Entry::File("configs/catalog.json".into(), text.into_bytes()),
        ]);
        push("catalogs/operators", "v1", catalog);
        let images = images.into_inner();
        Source {
            reg,
            images,
            signature: (sig_tag, sig_digest),
            host,
            relay,
        }
    }

    /// The catalog reference.
    pub fn catalog(&self) -> String {
        format!("{}/catalogs/operators:v1", self.host)
    }

    /// A configuration selecting the etcd package (its channel head), the ubi additional image
    /// and a blocked one, with `extra` lines added to the operator entry.
    pub fn config(&self, dir: &Path, catalog: &str, extra: &str) -> std::path::PathBuf {
        let text = format!(
            "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: {catalog}\n{extra}    packages:\n    - name: etcd\n  additionalImages:\n  - name: {h}/tools/ubi:9\n  - name: {h}/blocked/thing:1\n  blockedImages:\n  - name: .*/blocked/.*\n",
            h = self.host
        );
        let p = dir.join("imageset.yaml");
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The images this configuration must bring (with dependencies), by source reference.
    pub fn expected(&self, with_dep: bool) -> Vec<String> {
        let h = &self.host;
        let head = &self.images[&format!("{h}/etcd/etcd-bundle:v1.2.0")];
        let mut v = vec![
            // The catalog names the channel head by digest.
            format!("{h}/etcd/etcd-bundle@{head}"),
            format!("{h}/tools/ubi:9"),
        ];
        if with_dep {
            v.push(format!("{h}/dep/dep-bundle:v1.1.0"));
        }
        v
    }
}
