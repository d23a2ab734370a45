//! Synthesized CSVs against recorded answers. The bundles in `fixtures/csv-golden/` carry
//! `olm.csv.metadata` (no CSV object), so every bundle RPC answers with a CSV made from the
//! metadata, the package's description and icon, and the related images. The expected
//! `csvJson` files were recorded from opreg 0f013dc, which built the CSV message by message
//! (before answers were spliced from stored templates), and which the ported upstream tables
//! checked: key order, empty-field rules, HTML escaping (`<`, `>`, `&`, U+2028) and the package
//! description used only when the bundle has none.
#![allow(deprecated)] // GetBundleForChannel is deprecated in the proto, and still used by OLM.

use crate::common;
use common::*;
use opreg::api;
use tokio_stream::StreamExt;

fn golden(name: &str) -> String {
    std::fs::read_to_string(fixture(&format!("csv-golden/{name}.csv.json"))).unwrap()
}

#[test]
fn synthesized_csvs_equal_the_recorded_answers_in_every_bundle_rpc() {
    let server = InProcess::start(&fixture("csv-golden/catalog.yaml"));
    rt().block_on(async {
        let mut c = server.registry().await;
        for name in ["gold.v1.0.0", "gold.v1.1.0"] {
            let b = c
                .get_bundle(api::GetBundleRequest {
                    pkg_name: "gold".into(),
                    channel_name: "stable".into(),
                    csv_name: name.into(),
                })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(b.csv_json, golden(name), "GetBundle {name}");
            // With no objects of its own, the bundle's one object is the CSV.
            assert_eq!(b.object, vec![b.csv_json.clone()], "{name}");
            assert_eq!(b.csv_name, name);
            assert_eq!(b.channel_name, "stable");
        }
        let head = c
            .get_bundle_for_channel(api::GetBundleInChannelRequest {
                pkg_name: "gold".into(),
                channel_name: "stable".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(head.csv_json, golden("gold.v1.1.0"));
        let next = c
            .get_bundle_that_replaces(api::GetReplacementRequest {
                csv_name: "gold.v1.0.0".into(),
                pkg_name: "gold".into(),
                channel_name: "stable".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(next.csv_json, golden("gold.v1.1.0"));
        assert_eq!(next.object.len(), 1);
        // ListBundles leaves out the manifests of bundles with an image, as upstream does,
        // and fills the channel fields.
        let mut s = c
            .list_bundles(api::ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        let mut seen = Vec::new();
        while let Some(b) = s.next().await {
            let b = b.unwrap();
            assert!(
                b.csv_json.is_empty() && b.object.is_empty(),
                "{}",
                b.csv_name
            );
            seen.push((b.csv_name, b.replaces));
        }
        seen.sort();
        assert_eq!(
            seen,
            [
                ("gold.v1.0.0".to_string(), String::new()),
                ("gold.v1.1.0".to_string(), "gold.v1.0.0".to_string())
            ]
        );
    });
}

#[test]
fn the_model_wire_form_synthesizes_the_same_csv() {
    let src = fixture("csv-golden/catalog.yaml");
    let cat = opreg::source::load_sources(std::slice::from_ref(&src), &mut Vec::new()).unwrap();
    let pkg = &cat.packages["gold"];
    for name in ["gold.v1.0.0", "gold.v1.1.0"] {
        let w = opreg::wire::full_wire(pkg, &pkg.bundles[name]);
        assert_eq!(w.csv_json, golden(name), "{name}");
    }
}
