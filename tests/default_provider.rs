//! GetDefaultBundleThatProvides against its definition, for every API the community catalog
//! provides. The server answers it with one query; here the answer is composed from the other
//! RPCs, as upstream's querier defines it: the latest channel entries that provide the API
//! (GetLatestChannelEntriesThatProvide), sorted by package name, the first whose channel is
//! its package's default channel (GetPackage), that entry's bundle (GetBundle). No provider
//! at all and no provider in a default channel are two different NOT_FOUND messages.

use crate::common;
use common::*;
use opreg::api;
use std::collections::{BTreeSet, HashMap};
use tokio_stream::StreamExt;

#[test]
fn the_default_provider_is_the_first_latest_provider_in_a_default_channel() {
    let catalog = corpus_valid("community-operators.fbc.json");
    let server = InProcess::start(&catalog);
    rt().block_on(async {
        let mut c = server.registry().await;
        // Every provided API, from ListBundles.
        let mut apis = BTreeSet::new();
        let mut all = c
            .list_bundles(api::ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        while let Some(b) = all.next().await {
            for a in b.unwrap().provided_apis {
                apis.insert((a.group, a.version, a.kind));
            }
        }
        assert!(apis.len() > 500, "{} APIs", apis.len());
        // One that nothing provides.
        apis.insert(("none.example.com".into(), "v1".into(), "Nothing".into()));
        let mut defaults: HashMap<String, String> = HashMap::new();
        let (mut found, mut not_default, mut none) = (0, 0, 0);
        for (group, version, kind) in apis {
            let latest = c
                .get_latest_channel_entries_that_provide(api::GetLatestProvidersRequest {
                    group: group.clone(),
                    version: version.clone(),
                    kind: kind.clone(),
                    plural: String::new(),
                })
                .await;
            let mut latest: Vec<api::ChannelEntry> = match latest {
                Ok(s) => s.into_inner().map(|e| e.unwrap()).collect().await,
                Err(_) => Vec::new(),
            };
            latest.sort_by(|a, b| a.package_name.cmp(&b.package_name));
            let mut want = None;
            for e in &latest {
                if !defaults.contains_key(&e.package_name) {
                    let p = c
                        .get_package(api::GetPackageRequest {
                            name: e.package_name.clone(),
                        })
                        .await
                        .unwrap()
                        .into_inner();
                    defaults.insert(e.package_name.clone(), p.default_channel_name);
                }
                if defaults[&e.package_name] == e.channel_name {
                    let b = c
                        .get_bundle(api::GetBundleRequest {
                            pkg_name: e.package_name.clone(),
                            channel_name: e.channel_name.clone(),
                            csv_name: e.bundle_name.clone(),
                        })
                        .await
                        .unwrap()
                        .into_inner();
                    want = Some(b);
                    break;
                }
            }
            let got = c
                .get_default_bundle_that_provides(api::GetDefaultProviderRequest {
                    group: group.clone(),
                    version: version.clone(),
                    kind: kind.clone(),
                    plural: String::new(),
                })
                .await;
            let gvk = format!("group:{group:?} version:{version:?} kind:{kind:?}");
            match (want, got) {
                (Some(w), Ok(g)) => {
                    assert_eq!(g.into_inner(), w, "{gvk}");
                    found += 1;
                }
                (None, Err(e)) => {
                    assert_eq!(e.code(), tonic::Code::NotFound, "{gvk}");
                    if latest.is_empty() {
                        assert_eq!(
                            e.message(),
                            format!("no channel entries found that provide {gvk}")
                        );
                        none += 1;
                    } else {
                        assert_eq!(e.message(), format!("no entry found that provides {gvk}"));
                        not_default += 1;
                    }
                }
                (w, g) => panic!("{gvk}: want {:?}, got {:?}", w.map(|b| b.csv_name), g),
            }
        }
        // The catalog exercises all three outcomes (APIs that only older bundles provide have
        // no latest provider, like the made-up one).
        assert!(found > 500, "{found} answered");
        assert!(
            not_default > 0,
            "no API provided only outside default channels"
        );
        assert!(none > 1, "{none} without a latest provider");
    });
}
