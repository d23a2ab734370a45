//! `opreg serve` over gRPC, checked with a tonic client: every FBC-column assertion for the
//! upstream manifests, deprecations, custom schemas and error codes against the server run in
//! this process ([`InProcess`]). The real binary's start-up and answers are
//! tests/serve_binary.rs; graceful shutdown is tests/graceful_shutdown.rs.

#![allow(deprecated)] // GetBundleForChannel is deprecated in the proto, and still used by OLM.

use super::cli_messages::catalog;
use crate::common;
use common::*;
use opreg::api;
use serde_json::Value;
use std::collections::BTreeSet;
use tokio_stream::StreamExt;
use tonic::Code;

type Client = api::registry_client::RegistryClient<tonic::transport::Channel>;

pub(crate) async fn package(
    c: &mut Client,
    name: impl Into<String>,
) -> Result<api::Package, tonic::Status> {
    let name = name.into();
    Ok(c.get_package(api::GetPackageRequest { name })
        .await?
        .into_inner())
}

pub(crate) async fn bundle(
    c: &mut Client,
    pkg: impl Into<String>,
    channel: impl Into<String>,
    csv: impl Into<String>,
) -> Result<api::Bundle, tonic::Status> {
    let req = api::GetBundleRequest {
        pkg_name: pkg.into(),
        channel_name: channel.into(),
        csv_name: csv.into(),
    };
    Ok(c.get_bundle(req).await?.into_inner())
}

pub(crate) async fn bundle_for_channel(
    c: &mut Client,
    pkg: impl Into<String>,
    channel: impl Into<String>,
) -> Result<api::Bundle, tonic::Status> {
    let req = api::GetBundleInChannelRequest {
        pkg_name: pkg.into(),
        channel_name: channel.into(),
    };
    Ok(c.get_bundle_for_channel(req).await?.into_inner())
}

pub(crate) async fn replacement(
    c: &mut Client,
    csv: impl Into<String>,
    pkg: impl Into<String>,
    channel: impl Into<String>,
) -> Result<api::Bundle, tonic::Status> {
    let req = api::GetReplacementRequest {
        csv_name: csv.into(),
        pkg_name: pkg.into(),
        channel_name: channel.into(),
    };
    Ok(c.get_bundle_that_replaces(req).await?.into_inner())
}

fn upstream_server() -> InProcess {
    InProcess::start(&shared("upstream-manifests"))
}

/// Parses a YAML manifest file into JSON for comparison with csvJson/object.
fn yaml_file(path: &std::path::Path) -> Value {
    use serde::Deserialize;
    let text = std::fs::read_to_string(path).unwrap();
    let de = yaml_serde::Deserializer::from_str(&text).next().unwrap();
    Value::deserialize(de).unwrap()
}

pub(crate) async fn collect<T>(mut s: tonic::Streaming<T>) -> Vec<T> {
    let mut out = Vec::new();
    while let Some(x) = s.next().await {
        out.push(x.unwrap());
    }
    out
}

#[test]
fn upstream_manifests_over_grpc() {
    let server = upstream_server();
    rt().block_on(async {
        let mut c = server.registry().await;

        // ListPackages
        let names: BTreeSet<String> = collect(
            c.list_packages(api::ListPackageRequest {})
                .await
                .unwrap()
                .into_inner(),
        )
        .await
        .into_iter()
        .map(|p| p.name)
        .collect();
        assert_eq!(
            names,
            BTreeSet::from([
                "etcd".into(),
                "prometheus".into(),
                "strimzi-kafka-operator".into()
            ])
        );

        // GetPackage: channels sorted by name, with heads.
        let p = package(&mut c, "etcd").await.unwrap();
        assert_eq!(p.default_channel_name, "alpha");
        let chans: Vec<(String, String)> = p
            .channels
            .iter()
            .map(|c| (c.name.clone(), c.csv_name.clone()))
            .collect();
        assert_eq!(
            chans,
            vec![
                ("alpha".into(), "etcdoperator.v0.9.2".into()),
                ("beta".into(), "etcdoperator.v0.9.0".into()),
                ("stable".into(), "etcdoperator.v0.9.2".into())
            ]
        );
        let prom = package(&mut c, "prometheus").await.unwrap();
        assert_eq!(prom.default_channel_name, "preview");

        // GetBundle: csvJson and objects equal the manifests on disk (as JSON).
        let b = bundle(&mut c, "etcd", "alpha", "etcdoperator.v0.9.2")
            .await
            .unwrap();
        let dir = shared("upstream-manifests/etcd/0.9.2");
        let csv_want = yaml_file(&dir.join("etcdoperator.v0.9.2.clusterserviceversion.yaml"));
        let csv_got: Value = serde_json::from_str(&b.csv_json).unwrap();
        assert_eq!(csv_got, csv_want);
        let mut want_objs: Vec<String> = [
            "etcdoperator.v0.9.2.clusterserviceversion.yaml",
            "etcdbackup.crd.yaml",
            "etcdcluster.crd.yaml",
            "etcdrestore.crd.yaml",
        ]
        .iter()
        .map(|f| yaml_file(&dir.join(f)).to_string())
        .collect();
        let mut got_objs: Vec<String> = b
            .object
            .iter()
            .map(|o| serde_json::from_str::<Value>(o).unwrap().to_string())
            .collect();
        want_objs.sort();
        got_objs.sort();
        assert_eq!(got_objs, want_objs);
        assert_eq!(b.version, "0.9.2");
        assert_eq!(b.skip_range, "< 0.6.0");
        assert_eq!(b.channel_name, "alpha");
        assert_eq!(b.bundle_path, "");
        assert!(
            b.replaces.is_empty() && b.skips.is_empty(),
            "GetBundle must return a trimmed bundle"
        );
        assert!(b
            .provided_apis
            .iter()
            .any(|g| g.group == "etcd.database.coreos.com"
                && g.kind == "EtcdCluster"
                && g.version == "v1beta2"
                && g.plural.is_empty()));
        assert!(b
            .properties
            .iter()
            .all(|p| p.r#type != "olm.bundle.object" && p.r#type != "olm.csv.metadata"));
        assert!(b.properties.iter().any(|p| p.r#type == "olm.package"
            && p.value == r#"{"packageName":"etcd","version":"0.9.2"}"#));

        // GetBundleForChannel: the head, full.
        let h = bundle_for_channel(&mut c, "etcd", "beta").await.unwrap();
        assert_eq!(h.csv_name, "etcdoperator.v0.9.0");
        assert!(!h.csv_json.is_empty());

        // GetChannelEntriesThatReplace: replaces is the entry's own replaces.
        let es = collect(
            c.get_channel_entries_that_replace(api::GetAllReplacementsRequest {
                csv_name: "etcdoperator.v0.9.0".into(),
            })
            .await
            .unwrap()
            .into_inner(),
        )
        .await;
        let got: BTreeSet<(String, String, String, String)> = es
            .into_iter()
            .map(|e| (e.package_name, e.channel_name, e.bundle_name, e.replaces))
            .collect();
        let want: BTreeSet<(String, String, String, String)> = ["alpha", "stable"]
            .iter()
            .map(|ch| {
                (
                    "etcd".into(),
                    ch.to_string(),
                    "etcdoperator.v0.9.2".into(),
                    "etcdoperator.v0.9.0".into(),
                )
            })
            .collect();
        assert_eq!(got, want);
        let es = collect(
            c.get_channel_entries_that_replace(api::GetAllReplacementsRequest {
                csv_name: "etcdoperator.v0.9.1".into(),
            })
            .await
            .unwrap()
            .into_inner(),
        )
        .await;
        assert_eq!(
            es.len(),
            2,
            "the synthetic skip target is replaced in alpha and stable"
        );
        assert!(es.iter().all(|e| e.replaces == "etcdoperator.v0.9.0"));

        // GetBundleThatReplaces, including the synthetic etcdoperator.v0.9.1.
        for (name, want) in [
            ("etcdoperator.v0.9.1", "etcdoperator.v0.9.2"),
            ("etcdoperator.v0.9.0", "etcdoperator.v0.9.2"),
            ("etcdoperator.v0.6.1", "etcdoperator.v0.9.0"),
        ] {
            let r = replacement(&mut c, name, "etcd", "alpha").await.unwrap();
            assert_eq!(r.csv_name, want, "replacement of {name}");
            assert!(r.replaces.is_empty() && r.skips.is_empty());
        }
        let err = replacement(&mut c, "etcdoperator.v0.9.2", "etcd", "alpha")
            .await
            .unwrap_err();
        assert_eq!(
            err.message(),
            "no entry found for package \"etcd\", channel \"alpha\""
        );
        let err = replacement(&mut c, "x", "nope", "alpha").await.unwrap_err();
        assert_eq!(err.message(), "package nope not found");
        assert_eq!(err.code(), Code::NotFound);

        // Provider queries.
        let gvk = ("etcd.database.coreos.com", "v1beta2", "EtcdCluster");
        let all = collect(
            c.get_channel_entries_that_provide(api::GetAllProvidersRequest {
                group: gvk.0.into(),
                version: gvk.1.into(),
                kind: gvk.2.into(),
                plural: String::new(),
            })
            .await
            .unwrap()
            .into_inner(),
        )
        .await;
        let all: BTreeSet<(String, String, String)> = all
            .into_iter()
            .map(|e| (e.channel_name, e.bundle_name, e.replaces))
            .collect();
        let t = |c: &str, b: &str, r: &str| {
            (
                c.to_string(),
                format!("etcdoperator.{b}"),
                if r.is_empty() {
                    String::new()
                } else {
                    format!("etcdoperator.{r}")
                },
            )
        };
        let want: BTreeSet<_> = [
            t("alpha", "v0.9.2", "v0.9.0"),
            t("alpha", "v0.9.2", "v0.9.1"),
            t("alpha", "v0.9.0", "v0.6.1"),
            t("alpha", "v0.6.1", ""),
            t("beta", "v0.9.0", "v0.6.1"),
            t("beta", "v0.6.1", ""),
            t("stable", "v0.9.2", "v0.9.0"),
            t("stable", "v0.9.2", "v0.9.1"),
            t("stable", "v0.9.0", "v0.6.1"),
            t("stable", "v0.6.1", ""),
        ]
        .into_iter()
        .collect();
        assert_eq!(all, want);
        let latest = collect(
            c.get_latest_channel_entries_that_provide(api::GetLatestProvidersRequest {
                group: gvk.0.into(),
                version: gvk.1.into(),
                kind: gvk.2.into(),
                plural: String::new(),
            })
            .await
            .unwrap()
            .into_inner(),
        )
        .await;
        let latest: BTreeSet<_> = latest
            .into_iter()
            .map(|e| (e.channel_name, e.bundle_name, e.replaces))
            .collect();
        let want: BTreeSet<_> = [
            t("alpha", "v0.9.2", "v0.9.0"),
            t("beta", "v0.9.0", "v0.6.1"),
            t("stable", "v0.9.2", "v0.9.0"),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            latest, want,
            "latest = heads only; the out-of-channel skip v0.9.1 is not listed"
        );
        let d = c
            .get_default_bundle_that_provides(api::GetDefaultProviderRequest {
                group: gvk.0.into(),
                version: gvk.1.into(),
                kind: gvk.2.into(),
                plural: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (d.csv_name.as_str(), d.channel_name.as_str()),
            ("etcdoperator.v0.9.2", "alpha")
        );
        let err = c
            .get_channel_entries_that_provide(api::GetAllProvidersRequest {
                group: "no".into(),
                version: "v1".into(),
                kind: "Nothing".into(),
                plural: String::new(),
            })
            .await
            .unwrap_err();
        assert_eq!(
            err.message(),
            "no channel entries found that provide group:\"no\" version:\"v1\" kind:\"Nothing\""
        );

        // ListBundles: one message per (bundle, channel), ordered by (channel, package, name).
        let all = collect(
            c.list_bundles(api::ListBundlesRequest {})
                .await
                .unwrap()
                .into_inner(),
        )
        .await;
        assert_eq!(all.len(), 20);
        let keys: Vec<(String, String, String)> = all
            .iter()
            .map(|b| {
                (
                    b.channel_name.clone(),
                    b.package_name.clone(),
                    b.csv_name.clone(),
                )
            })
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        let per_pkg = |p: &str| all.iter().filter(|b| b.package_name == p).count();
        assert_eq!(
            (
                per_pkg("etcd"),
                per_pkg("prometheus"),
                per_pkg("strimzi-kafka-operator")
            ),
            (8, 3, 9)
        );
        let e92 = all
            .iter()
            .find(|b| b.channel_name == "alpha" && b.csv_name == "etcdoperator.v0.9.2")
            .unwrap();
        assert_eq!(e92.replaces, "etcdoperator.v0.9.0");
        assert_eq!(e92.skips, vec!["etcdoperator.v0.9.1".to_string()]);
        assert!(
            !e92.csv_json.is_empty(),
            "no bundlePath, so manifests are inline"
        );
        let s12 = all
            .iter()
            .find(|b| b.channel_name == "alpha" && b.csv_name == "strimzi-cluster-operator.v0.12.2")
            .unwrap();
        assert_eq!(s12.replaces, "strimzi-cluster-operator.v0.12.1");

        // Errors: NOT_FOUND with opm's texts; INVALID_ARGUMENT for missing fields.
        let err = package(&mut c, "nope").await.unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (Code::NotFound, "package \"nope\" not found")
        );
        let err = package(&mut c, String::new()).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
        let err = bundle(&mut c, "etcd", "alpha", "nope").await.unwrap_err();
        assert_eq!(
            err.message(),
            "package \"etcd\", channel \"alpha\", bundle \"nope\" not found"
        );
        let err = bundle_for_channel(&mut c, "etcd", "gamma")
            .await
            .unwrap_err();
        assert_eq!(
            err.message(),
            "package \"etcd\", channel \"gamma\" not found"
        );
    });
}

#[test]
fn deprecations_and_custom_schemas() {
    let server = InProcess::start(&fixture("deprecations"));
    rt().block_on(async {
        let mut c = server.registry().await;
        let p = package(&mut c, "kiwi").await.unwrap();
        assert_eq!(
            p.deprecation.unwrap().message,
            "kiwi is no longer maintained.\n"
        );
        let legacy = p.channels.iter().find(|c| c.name == "legacy").unwrap();
        assert_eq!(
            legacy.deprecation.as_ref().unwrap().message,
            "the legacy channel is frozen.\n"
        );
        assert!(p
            .channels
            .iter()
            .find(|c| c.name == "stable")
            .unwrap()
            .deprecation
            .is_none());
        let b = bundle(&mut c, "kiwi", "stable", "kiwi.v1.0.0")
            .await
            .unwrap();
        // The last block scalar ends the file with no newline; clip chomping still keeps one.
        assert_eq!(
            b.deprecation.unwrap().message,
            "kiwi.v1.0.0 is deprecated; move to 2.0.0.\n"
        );
        let all = collect(
            c.list_bundles(api::ListBundlesRequest {})
                .await
                .unwrap()
                .into_inner(),
        )
        .await;
        assert_eq!(
            all.iter().filter(|b| b.deprecation.is_some()).count(),
            2,
            "v1.0.0 is in two channels"
        );
        assert!(
            all.iter()
                .all(|b| b.csv_json.is_empty() && b.object.is_empty()),
            "bundlePath set: no manifests in ListBundles"
        );

        let ch = tonic::transport::Endpoint::from_shared(server.addr())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut x = api::experimental_registry_client::ExperimentalRegistryClient::new(ch);
        let req = |schema: &str, pkg: &str, ack: bool| {
            let mut r = tonic::Request::new(api::ExperimentalListPackageCustomSchemasRequest {
                schema: schema.into(),
                package_name: pkg.into(),
            });
            if ack {
                r.metadata_mut()
                    .insert("x-acknowledge-experimental", "true".parse().unwrap());
            }
            r
        };
        let got = collect(
            x.experimental_list_package_custom_schemas(req("example.notes", "kiwi", true))
                .await
                .unwrap()
                .into_inner(),
        )
        .await;
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].fields.get("name").and_then(|v| v.kind.clone()),
            Some(prost_types::value::Kind::StringValue(
                "release-notes".into()
            ))
        );
        let packageless = collect(
            x.experimental_list_package_custom_schemas(req("example.notes", "", true))
                .await
                .unwrap()
                .into_inner(),
        )
        .await;
        assert_eq!(
            packageless.len(),
            1,
            "packageName \"\" returns only metas without a package"
        );
        let none = collect(
            x.experimental_list_package_custom_schemas(req("example.notes", "kiwi", false))
                .await
                .unwrap()
                .into_inner(),
        )
        .await;
        assert!(
            none.is_empty(),
            "without the header: empty stream, no error"
        );
        let err = x
            .experimental_list_package_custom_schemas(req("", "", true))
            .await
            .unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (Code::InvalidArgument, "schema is required")
        );
        let err = x
            .experimental_list_package_custom_schemas(req("-bad", "", true))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
    });
}

/// Upstream's `api.Bundle` has no release field (operator-registry's `pkg/api/registry.proto`
/// and `model_to_api.go` fill `version` from the `olm.package` version alone): a release is
/// served only inside the `olm.package` property, exactly as the catalog gave it.
#[test]
fn a_bundle_release_is_served_inside_its_olm_package_property() {
    let cat = "---\nschema: olm.package\nname: rel\ndefaultChannel: stable\n\
---\nschema: olm.channel\npackage: rel\nname: stable\nentries:\n  - name: rel-v1.0.0-2\n\
---\nschema: olm.bundle\nname: rel-v1.0.0-2\npackage: rel\nimage: quay.io/x/rel:v1.0.0-2\n\
properties:\n  - type: olm.package\n    value: {packageName: rel, version: 1.0.0, release: \"2\"}\n";
    let (_t, dir) = catalog(&[("index.yaml", cat)]);
    let server = common::InProcess::start(&dir);
    common::rt().block_on(async {
        let mut c = server.registry().await;
        let b = c
            .get_bundle(opreg::api::GetBundleRequest {
                pkg_name: "rel".into(),
                channel_name: "stable".into(),
                csv_name: "rel-v1.0.0-2".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(b.version, "1.0.0", "the version field carries no release");
        let pkg = b
            .properties
            .iter()
            .find(|p| p.r#type == "olm.package")
            .expect("olm.package property");
        let v: serde_json::Value = serde_json::from_str(&pkg.value).unwrap();
        assert_eq!(v["release"], "2", "{}", pkg.value);
        assert_eq!(v["version"], "1.0.0");
    });
}
