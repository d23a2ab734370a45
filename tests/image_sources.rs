//! Image references as SOURCEs (issue 14), against a real registry (Debian's
//! `docker-registry`) on loopback: catalog, index and bundle images pushed through the
//! registry API by the tests, read by the real binary.

use crate::common;
use crate::registry_support;
use registry_support::ctx::*;
use registry_support::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

#[test]
fn catalog_image_layers_and_whiteouts_render_like_the_local_catalog() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    let prom = fbc_dir(&ctx, "prometheus");
    let etcd_json = std::fs::read(etcd.join("catalog.json")).unwrap();
    let mut first = dir_entries(&prom, "configs/prometheus");
    first.push(Entry::Dir("configs/etcd/".into()));
    first.push(Entry::File(
        "configs/etcd/stale.json".into(),
        b"{not json".to_vec(),
    ));
    first.push(Entry::File("etc/os-release".into(), b"ID=test\n".to_vec()));
    let img = Image::new(&[(CONFIGS, "/configs")]).layer(&first).layer(&[
        // The opaque whiteout hides etcd/stale.json; this layer's own file stays.
        Entry::File("configs/etcd/.wh..wh..opq".into(), vec![]),
        Entry::File("configs/etcd/catalog.json".into(), etcd_json),
        Entry::File("configs/.wh.prometheus".into(), vec![]),
    ]);
    let digest = reg.push("catalogs/etcd", "v1", &img);
    let reference = format!("{}/catalogs/etcd:v1", reg.host());
    let (code, out, err) = ctx.run(&["render", &reference, "--use-http"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, render_local(&etcd));
    assert!(
        err.contains(&digest),
        "the resolved digest is logged: {err}"
    );
    // Nothing is left in the temp dir, and the cache holds the blobs by digest.
    assert_eq!(std::fs::read_dir(ctx.tmp()).unwrap().count(), 0);
    for b in img.blobs() {
        assert!(ctx
            .cache()
            .join("blobs/sha256")
            .join(&sha(&b)[7..])
            .is_file());
    }
}

#[test]
fn ingest_records_the_digest_and_a_warm_cache_downloads_no_blob() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    let img = catalog_image(&etcd);
    let digest = reg.push("cat", "latest", &img);
    let reference = format!("{}/cat", reg.host());
    let db = ctx.path("out.db");
    let db_s = db.to_str().unwrap();
    let (code, _, err) = ctx.run(&["ingest", &reference, "--use-http", "-o", db_s]);
    assert_eq!(code, 0, "{err}");
    let store = opreg::store::Store::open(&db).unwrap();
    let images: Value = serde_json::from_str(&store.info("images").unwrap().unwrap()).unwrap();
    assert_eq!(images[0]["reference"], reference.as_str());
    assert_eq!(images[0]["digest"], digest.as_str());
    assert_eq!(images[0]["kind"], "catalog");
    drop(store);
    // The same catalog ingested from disk has the same source digest.
    let local = ctx.path("local.db");
    let (code, _, err) = ctx.run(&[
        "ingest",
        etcd.to_str().unwrap(),
        "-o",
        local.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let digest_of = |p: &Path| {
        opreg::store::Store::open(p)
            .unwrap()
            .info("source_digest")
            .unwrap()
    };
    assert_eq!(digest_of(&db), digest_of(&local));

    // Remove every blob from the registry: a second run by tag needs only the manifest.
    for b in img.blobs() {
        reg.delete_blob("cat", &sha(&b));
    }
    let (code, _, err) = ctx.run(&["ingest", &reference, "--use-http", "-o", db_s]);
    assert_eq!(code, 0, "warm cache: {err}");
    // Without the cache the blobs are really gone.
    let (code, _, err) = ctx.run(&[
        "ingest",
        &reference,
        "--use-http",
        "--no-image-cache",
        "-o",
        db_s,
    ]);
    let line = one_error_line(code, &err, &reference);
    assert!(line.contains("not found"), "{line}");
}

#[test]
fn legacy_index_image_renders_the_whole_catalog() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let db = common::shared("legacy-index/bundles.db");
    let img = Image::new(&[(DATABASE, "/database/index.db")])
        .docker()
        .layer(&[
            Entry::Dir("database/".into()),
            Entry::File("database/index.db".into(), std::fs::read(&db).unwrap()),
        ]);
    reg.push("index", "v4.18", &img);
    let reference = format!("{}/index:v4.18", reg.host());
    let (code, out, err) = ctx.run(&["render", &reference, "--use-http"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, render_local(&db));
    let (code, _, err) = ctx.run(&["validate", &reference, "--use-http"]);
    assert_eq!(code, 0, "{err}");
    // An index image's database is not kept unpacked in the cache (a server serves it from
    // where it was unpacked, for as long as it runs); only its blobs are.
    let kept = std::fs::read_dir(ctx.cache().join("unpacked")).map_or(0, |d| d.count());
    assert_eq!(kept, 0);
    assert!(ctx.cache().join("blobs/sha256").is_dir());
}

#[test]
fn bundle_image_renders_one_olm_bundle_as_opm_does() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    reg.push("bundles/tvo", "6.1.10", &bundle_image());
    let reference = format!("{}/bundles/tvo:6.1.10", reg.host());
    let (code, out, err) = ctx.run(&["render", &reference, "--use-http"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = common::json_lines(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "one olm.bundle: {out}");
    let b = &lines[0];
    let local = local_bundle();
    assert_eq!(b["schema"], "olm.bundle");
    assert_eq!(b["image"], reference.as_str());
    assert_eq!(
        (&b["name"], &b["package"]),
        (&local["name"], &local["package"])
    );
    // The properties the bundle reader derives, with the bundle objects last.
    let props = b["properties"].as_array().unwrap();
    let mut mine = props.clone();
    let mut theirs = local["properties"].as_array().unwrap().clone();
    let key = |v: &Value| v.to_string();
    mine.sort_by_key(key);
    theirs.sort_by_key(key);
    assert_eq!(mine, theirs);
    let first_object = props
        .iter()
        .position(|p| p["type"] == "olm.bundle.object")
        .unwrap();
    assert!(props[first_object..]
        .iter()
        .all(|p| p["type"] == "olm.bundle.object"));
    assert!(first_object > 0);
    let others: Vec<(String, String)> = props[..first_object]
        .iter()
        .map(|p| {
            (
                p["type"].as_str().unwrap().to_string(),
                p["value"].to_string(),
            )
        })
        .collect();
    let mut sorted = others.clone();
    sorted.sort();
    assert_eq!(others, sorted, "properties sorted by type, then value");
    // Related images: the CSV's and the operator's plus the bundle image, sorted by image.
    let related: Vec<&str> = b["relatedImages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["image"].as_str().unwrap())
        .collect();
    assert!(related.contains(&reference.as_str()));
    let mut s = related.clone();
    s.sort();
    assert_eq!(related, s);
    assert_eq!(
        related.len(),
        local["relatedImages"].as_array().map_or(0, Vec::len) + 1
    );

    // opm's migration to olm.csv.metadata.
    let (code, out, err) = ctx.run(&[
        "render",
        &reference,
        "--use-http",
        "--migrate-level",
        "bundle-object-to-csv-metadata",
    ]);
    assert_eq!(code, 0, "{err}");
    let b: Value = serde_json::from_str(common::json_lines(&out).lines().next().unwrap()).unwrap();
    let props = b["properties"].as_array().unwrap();
    assert!(props.iter().all(|p| p["type"] != "olm.bundle.object"));
    let last = props.last().unwrap();
    assert_eq!(last["type"], "olm.csv.metadata");
    assert_eq!(
        last["value"]["displayName"],
        csv_of_bundle_dir()["spec"]["displayName"]
    );
    assert!(last["value"]["displayName"].is_string());
    assert_eq!(props.len(), others.len() + 1);
}

#[test]
fn bundle_image_ingests_with_its_image_recorded() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let digest = reg.push("bundles/tvo", "6.1.10", &bundle_image());
    let reference = format!("{}/bundles/tvo:6.1.10", reg.host());
    let db = ctx.path("b.db");
    let (code, _, err) = ctx.run(&[
        "ingest",
        &reference,
        "--use-http",
        "-o",
        db.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let cat = opreg::store::Store::open(&db)
        .unwrap()
        .load_catalog()
        .unwrap();
    let b = &cat.packages["tvo-operator"].bundles["tvo-operator.6.1.10"];
    assert_eq!(b.image, reference);
    let info = opreg::store::Store::open(&db)
        .unwrap()
        .info("images")
        .unwrap()
        .unwrap();
    assert!(
        info.contains(&digest) && info.contains("\"bundle\""),
        "{info}"
    );
}

#[test]
fn serve_pulls_validates_and_serves_an_image() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    reg.push("cat", "v1", &catalog_image(&etcd));
    let reference = format!("{}/cat:v1", reg.host());
    let cache = ctx.path("serve-cache");
    let image_cache = ctx.cache();
    let args = [
        reference.as_str(),
        "--use-http",
        "--image-cache",
        image_cache.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
        "--cache-enforce-integrity=false",
    ];
    for _ in 0..2 {
        let server = common::Server::start(&args);
        let names = list_packages(&server);
        assert_eq!(names, vec!["etcd".to_string()]);
        assert_eq!(server.terminate(), Some(0));
    }
    // The built cache records the image.
    let db = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "db"))
        .unwrap()
        .path();
    let info = opreg::store::Store::open(&db)
        .unwrap()
        .info("images")
        .unwrap()
        .unwrap();
    assert!(info.contains(&reference), "{info}");
}

#[test]
fn serve_reports_not_serving_while_pulling_and_a_silent_registry_times_out() {
    let ctx = Ctx::new();
    let (port, _h) = silent_server();
    let reference = format!("127.0.0.1:{port}/cat:v1");
    let grpc = common::free_port();
    let started = Instant::now();
    let args = format!("serve {reference} --use-http --registry-timeout 3 -p {grpc} -t /dev/null");
    let args: Vec<&str> = args.split(' ').collect();
    let child = ctx
        .cmd(&args, &[])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen_not_serving = false;
    while started.elapsed() < Duration::from_secs(3) && !seen_not_serving {
        seen_not_serving = health_status(grpc) == Some(2);
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        seen_not_serving,
        "health said NOT_SERVING while the image was pulled"
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let line = one_error_line(out.status.code().unwrap_or(-1), &err, &reference);
    assert!(line.contains("did not answer within 3 s"), "{line}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn corrupted_blob_is_a_digest_mismatch_and_is_not_cached() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    let img = catalog_image(&etcd);
    reg.push("cat", "v1", &img);
    let layer = sha(&img.layers[0].1);
    let f = reg.blob_file(&layer);
    let mut bytes = std::fs::read(&f).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&f, bytes).unwrap();
    let r = format!("{}/cat:v1", reg.host());
    let (code, _, err) = ctx.run(&[
        "ingest",
        &r,
        "--use-http",
        "-o",
        ctx.path("x.db").to_str().unwrap(),
    ]);
    let line = one_error_line(code, &err, &r);
    assert!(
        line.contains("digest mismatch") && line.contains(&layer),
        "{line}"
    );
    assert!(!ctx.cache().join("blobs/sha256").join(&layer[7..]).exists());
    assert!(!ctx.path("x.db").exists());
    assert_eq!(
        std::fs::read_dir(ctx.cache().join("tmp")).unwrap().count(),
        0
    );
}

#[test]
fn images_without_labels_and_over_limits_are_refused() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let plain = Image::new(&[("maintainer", "someone")])
        .layer(&[Entry::File("etc/hostname".into(), b"x".to_vec())]);
    reg.push("plain", "v1", &plain);
    let r = format!("{}/plain:v1", reg.host());
    let (code, _, err) = ctx.run(&["render", &r, "--use-http"]);
    let line = one_error_line(code, &err, &r);
    assert!(
        line.contains("not a catalog, index or bundle image"),
        "{line}"
    );

    let etcd = fbc_dir(&ctx, "etcd");
    reg.push("cat", "v1", &catalog_image(&etcd));
    let r = format!("{}/cat:v1", reg.host());
    for flag in ["--max-manifest-size=100", "--max-layer-size=1000"] {
        let (code, _, err) = ctx.run(&["render", &r, "--use-http", "--no-image-cache", flag]);
        let line = one_error_line(code, &err, &r);
        assert!(line.contains("size limit"), "{flag}: {line}");
    }
}

#[test]
fn unsafe_layer_entries_are_refused_and_nothing_escapes() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let cases: Vec<(&str, Vec<Entry>)> = vec![
        (
            "dotdot",
            vec![Entry::File(
                "configs/../../../escaped".into(),
                b"x".to_vec(),
            )],
        ),
        (
            "absolute",
            vec![Entry::File("/configs/abs.json".into(), b"{}".to_vec())],
        ),
        (
            "symlink",
            vec![
                Entry::Symlink("configs/link".into(), "../../../../../../tmp".into()),
                Entry::File("configs/link/escaped".into(), b"x".to_vec()),
            ],
        ),
        (
            "hardlink",
            vec![Entry::HardLink(
                "configs/h".into(),
                "../../etc/passwd".into(),
            )],
        ),
        ("device", vec![Entry::CharDevice("configs/null".into())]),
    ];
    for (name, entries) in cases {
        let mut all = vec![Entry::Dir("configs/".into())];
        all.extend(entries);
        let img = Image::new(&[(CONFIGS, "/configs")]).layer(&all);
        reg.push(&format!("unsafe/{name}"), "v1", &img);
        let r = format!("{}/unsafe/{name}:v1", reg.host());
        let (code, _, err) = ctx.run(&["render", &r, "--use-http"]);
        let line = one_error_line(code, &err, &r);
        assert!(line.contains("unsafe layer entry"), "{name}: {line}");
        assert_eq!(
            std::fs::read_dir(ctx.tmp()).unwrap().count(),
            0,
            "{name}: temp dir left"
        );
    }
    assert!(!ctx.path("escaped").exists() && !Path::new("/tmp/escaped").exists());
}

#[test]
fn multi_arch_index_picks_the_platform() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    let prom = fbc_dir(&ctx, "prometheus");
    let index = reg.push_index(
        "multi",
        "v1",
        &[
            ("linux", "amd64", &catalog_image(&etcd).docker()),
            ("linux", "arm64", &catalog_image(&prom)),
        ],
    );
    let r = format!("{}/multi:v1", reg.host());
    let (code, out, err) = ctx.run(&["render", &r, "--use-http", "--platform", "linux/arm64"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, render_local(&prom));
    let (code, out, err) = ctx.run(&["render", &r, "--use-http", "--platform", "linux/amd64"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, render_local(&etcd));
    assert!(
        err.contains(&index),
        "the index digest is what the tag resolves to: {err}"
    );
    let (code, _, err) = ctx.run(&["render", &r, "--use-http", "--platform", "linux/s390x"]);
    let line = one_error_line(code, &err, &r);
    assert!(line.contains("no image for platform linux/s390x"), "{line}");
    // By digest too.
    let by_digest = format!("{}/multi@{index}", reg.host());
    let (code, out, err) = ctx.run(&[
        "render",
        &by_digest,
        "--use-http",
        "--platform",
        "linux/arm64",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, render_local(&prom));
}

#[test]
fn oci_layout_with_zstd_layers_works_offline() {
    let ctx = Ctx::new();
    let etcd = fbc_dir(&ctx, "etcd");
    let img = Image::new(&[(CONFIGS, "/configs")]).zstd_layer(&dir_entries(&etcd, "configs"));
    let layout = ctx.path("layout");
    img.write_layout(&layout, "v1");
    let src = format!("oci:{}:v1", layout.display());
    let (code, out, err) = ctx.run(&["render", &src]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, render_local(&etcd));
    let src = format!("oci:{}:v2", layout.display());
    let (code, _, err) = ctx.run(&["render", &src]);
    let line = one_error_line(code, &err, &src);
    assert!(line.contains("not found"), "{line}");
}

#[test]
fn errors_in_an_image_name_the_reference_and_the_path_inside_it() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    // A channel whose only entry names no bundle: invalid, in /configs/broken/catalog.yaml.
    let dir = ctx.path("broken");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("catalog.yaml"),
        "schema: olm.package\nname: broken\ndefaultChannel: stable\n---\n\
         schema: olm.channel\npackage: broken\nname: stable\nentries:\n- name: broken.v1.0.0\n",
    )
    .unwrap();
    let img = Image::new(&[(CONFIGS, "/configs")]).layer(&dir_entries(&dir, "configs/broken"));
    reg.push("catalogs/broken", "v1", &img);
    let reference = format!("{}/catalogs/broken:v1", reg.host());
    let (code, _, err) = ctx.run(&["validate", &reference, "--use-http"]);
    assert_eq!(code, 1, "{err}");
    let want = format!("{reference}:/configs/broken/catalog.yaml");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error[")).collect();
    assert!(!errors.is_empty(), "{err}");
    for l in errors {
        assert!(l.contains(&want), "names {want}: {l}");
        assert!(!l.contains("opreg-image-"), "no temp path: {l}");
    }
}

#[test]
fn render_template_renders_bundle_images_as_render_does() {
    let reg = Registry::http();
    let ctx = Ctx::new();
    reg.push("bundles/tvo", "6.1.10", &bundle_image());
    let reference = format!("{}/bundles/tvo:6.1.10", reg.host());
    let (code, bundle, err) = ctx.run(&["render", &reference, "--use-http"]);
    assert_eq!(code, 0, "{err}");
    let name = serde_json::from_str::<Value>(bundle.trim()).unwrap()["name"]
        .as_str()
        .unwrap()
        .to_string();
    let template = ctx.path("basic.yaml");
    std::fs::write(
        &template,
        format!(
            "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: tvo-operator\n  defaultChannel: 6.1.x\n- schema: olm.channel\n  package: tvo-operator\n  name: 6.1.x\n  entries:\n  - name: {name}\n- schema: olm.bundle\n  image: {reference}\n"
        ),
    )
    .unwrap();
    let (code, out, err) = ctx.run(&[
        "render-template",
        "basic",
        template.to_str().unwrap(),
        "--use-http",
    ]);
    assert_eq!(code, 0, "{err}");
    let out = common::json_lines(&out);
    let bundle = common::json_lines(&bundle);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(
        lines[2],
        bundle.trim(),
        "the bundle is what `opreg render IMAGE` writes"
    );
    let rendered = ctx.path("rendered.json");
    std::fs::write(&rendered, &out).unwrap();
    let (code, _, err) = ctx.run(&["validate", rendered.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // A catalog image is not a bundle.
    let semver = ctx.path("semver.yaml");
    let catalog = format!("{}/catalog:v1", reg.host());
    reg.push("catalog", "v1", &catalog_image(&fbc_dir(&ctx, "etcd")));
    std::fs::write(
        &semver,
        format!("schema: olm.semver\nstable:\n  bundles:\n  - image: {catalog}\n"),
    )
    .unwrap();
    let (code, _, err) = ctx.run(&[
        "render-template",
        "semver",
        semver.to_str().unwrap(),
        "--use-http",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not a bundle image"), "{err}");
}
