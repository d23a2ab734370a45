//! What a second run asks of the registries: one connection per copying thread and side, not
//! one per image.

use super::mirror;
use crate::registry_support::ctx::Ctx;
use crate::registry_support::throttle::Throttle;
use crate::registry_support::{Entry, Image, Registry};

fn image(name: &str, arch: &'static str) -> Image {
    Image::new(&[("name", name)])
        .arch(arch)
        .layer(&[Entry::File(
            format!("app/{name}"),
            name.repeat(20).into_bytes(),
        )])
}

fn config(ctx: &Ctx, images: &[String]) -> String {
    let mut text = String::from(
        "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n",
    );
    for i in images {
        text.push_str(&format!("  - name: {i}\n"));
    }
    let p = ctx.path("imageset.yaml");
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().to_string()
}

#[test]
fn the_images_of_a_run_share_connections() {
    let src = Registry::http();
    let src_relay = Throttle::start(src.port, 0);
    let dst = Registry::http();
    let dst_relay = Throttle::start(dst.port, 0);
    let images: Vec<String> = (0..8)
        .map(|i| {
            let repo = format!("app/image{i}");
            src.push(&repo, "v1", &image(&repo, "amd64"));
            format!("{}/{repo}:v1", src_relay.host())
        })
        .collect();
    let ctx = Ctx::new();
    let cfg = config(&ctx, &images);
    let ws = ctx.path("ws");
    let args = [
        "--parallel-images",
        "2",
        "--config",
        cfg.as_str(),
        "--workspace",
        ws.to_str().unwrap(),
        &format!("docker://{}/m", dst_relay.host()),
    ];
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");
    let (src_before, dst_before) = (src_relay.connections(), dst_relay.connections());
    let (code, _, err) = mirror(&ctx, &args);
    assert_eq!(code, 0, "{err}");
    // Two images at a time: a connection each to either side, kept from image to image.
    let (to_src, to_dst) = (
        src_relay.connections() - src_before,
        dst_relay.connections() - dst_before,
    );
    assert!(
        to_src <= 3 && to_dst <= 3,
        "8 images, 2 at a time, made {to_src} connections to the source and {to_dst} to the destination"
    );
}
