//! `opreg validate --images` across runs and mirrors, counting the registry's requests at the
//! fault relay: an IDMS file sends lookups to the mirror (also the IDMS `opreg mirror` writes),
//! `--changed-from` asks only about the changed bundles' images, and a rerun with the cache
//! asks nothing about images pinned by digest, and confirms tags by their repository's list.

use crate::registry_support;

use opreg::mirror::resources::{render, Kind, Mirrored};
use registry_support::ctx::Ctx;
use registry_support::faults::{Action, Faults, Seen};
use registry_support::{Entry, Image, Registry};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn img(name: &str) -> Image {
    Image::new(&[]).layer(&[Entry::File(name.to_string(), name.as_bytes().to_vec())])
}

/// Package `p`, channel `stable`: bundles (name, version, image, related images).
fn catalog(dir: &Path, bundles: &[(&str, &str, String, Vec<String>)]) -> PathBuf {
    let mut y = String::from(
        "---\nschema: olm.package\nname: p\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n",
    );
    for (i, b) in bundles.iter().enumerate() {
        y += &format!("  - name: {}\n", b.0);
        if i > 0 {
            y += &format!("    replaces: {}\n", bundles[i - 1].0);
        }
    }
    for (name, version, image, related) in bundles {
        y += &format!(
            "---\nschema: olm.bundle\npackage: p\nname: {name}\nimage: {image}\n\
             properties:\n  - type: olm.package\n    value: {{packageName: p, version: {version}}}\n\
             relatedImages:\n"
        );
        for r in related {
            y += &format!("  - image: {r}\n");
        }
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("catalog.yaml"), y).unwrap();
    dir.to_path_buf()
}

fn validate(ctx: &Ctx, args: &[&str]) -> (i32, Value, String) {
    let mut all = vec!["validate", "-o", "json", "--use-http"];
    all.extend_from_slice(args);
    let (code, out, err) = ctx.run(&all);
    assert!(!err.contains("panicked"), "{err}");
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v, err)
}

fn image_findings(v: &Value) -> Vec<Value> {
    v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d.get("image").is_some())
        .cloned()
        .collect()
}

/// The GETs the relay has seen so far whose path contains `what`, by path.
fn gets(relay: &Faults, what: &str) -> Vec<String> {
    let mut v: Vec<String> = relay
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(s, _)| s.method == "GET" && s.path.contains(what))
        .map(|(s, _)| s.path.clone())
        .collect();
    v.sort();
    v
}

/// The manifest GETs the relay has seen so far, by path.
fn manifest_gets(relay: &Faults) -> Vec<String> {
    gets(relay, "/manifests/")
}

fn relay(reg: &Registry) -> Faults {
    Faults::start(reg.port, Box::new(|_: &Seen, _| Action::Relay))
}

#[test]
fn an_idms_sends_lookups_to_the_mirror_and_never_to_a_source_it_forbids() {
    let ctx = Ctx::new();
    let reg = Registry::http();
    let relay = relay(&reg);
    let mirror = format!("127.0.0.1:{}", relay.port);
    let (op, bundle) = (
        reg.push("ns/op", "v1", &img("op")),
        reg.push("ns/b", "1", &img("b")),
    );
    // The catalog names a staging registry that does not exist; only the mirror has them.
    let src = "staging.invalid";
    let cat = catalog(
        &ctx.path("cat"),
        &[(
            "p.v1",
            "1.0.0",
            format!("{src}/ns/b@{bundle}"),
            vec![format!("{src}/ns/op@{op}")],
        )],
    );
    let c = cat.to_str().unwrap();
    let idms = ctx.path("idms.yaml");
    std::fs::write(
        &idms,
        format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: m}}\n\
             spec:\n  imageDigestMirrors:\n  - source: {src}/ns\n    mirrors: [{mirror}/ns]\n    \
             mirrorSourcePolicy: NeverContactSource\n"
        ),
    )
    .unwrap();
    let i = idms.to_str().unwrap();
    let (code, v, err) = validate(&ctx, &[c, "--images", "--no-cache", "--image-mirrors", i]);
    assert_eq!((code, image_findings(&v)), (0, vec![]), "{err}");
    assert_eq!(
        manifest_gets(&relay),
        vec![
            format!("/v2/ns/b/manifests/{bundle}"),
            format!("/v2/ns/op/manifests/{op}")
        ]
    );
    // Without the mirror file the source is asked, and cannot be reached.
    let (code, v, _) = validate(&ctx, &[c, "--images", "--no-cache"]);
    assert_eq!(code, 1);
    let f = image_findings(&v);
    assert_eq!(f.len(), 2);
    assert!(f.iter().all(|d| d["rule"] == "image-unreachable"), "{v}");
    // A finding found at the mirror says where: the mirror holds a tag the source lacks.
    let missing = format!("{src}/ns/op@sha256:{}", "0".repeat(64));
    let cat2 = catalog(
        &ctx.path("cat2"),
        &[(
            "p.v1",
            "1.0.0",
            format!("{src}/ns/b@{bundle}"),
            vec![missing],
        )],
    );
    let (code, v, _) = validate(
        &ctx,
        &[
            cat2.to_str().unwrap(),
            "--images",
            "--no-cache",
            "--image-mirrors",
            i,
        ],
    );
    assert_eq!(code, 1);
    let f = image_findings(&v);
    assert_eq!(f.len(), 1, "{v}");
    assert_eq!(f[0]["rule"], "image-missing");
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("at {mirror}/ns/op@")),
        "{}",
        f[0]
    );
    // A bad mirror file is a usage error naming it.
    std::fs::write(ctx.path("bad.yaml"), "kind: ConfigMap\n").unwrap();
    let bad = ctx.path("bad.yaml");
    let (code, _, err) = ctx.run(&[
        "validate",
        c,
        "--images",
        "--image-mirrors",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad.yaml: document 1: kind ConfigMap"),
        "{err}"
    );
}

#[test]
fn the_idms_opreg_mirror_writes_sends_lookups_to_its_destination() {
    let ctx = Ctx::new();
    let reg = Registry::http();
    let relay = relay(&reg);
    let dest = format!("127.0.0.1:{}", relay.port);
    let op = reg.push("mirrored/team/op", "v1", &img("op"));
    let source = format!("quay.invalid/team/op@{op}");
    let files = render(
        &[Mirrored {
            source: source.clone(),
            destination: format!("{dest}/mirrored/team/op@{op}"),
            kind: Kind::Operator,
        }],
        &[],
        false,
    )
    .unwrap();
    let (name, text) = files.iter().find(|(n, _)| n.starts_with("idms")).unwrap();
    let idms = ctx.path(name);
    std::fs::write(&idms, text).unwrap();
    let bundle = reg.push("mirrored/team/b", "1", &img("b"));
    let cat = catalog(
        &ctx.path("cat"),
        &[(
            "p.v1",
            "1.0.0",
            format!("{dest}/mirrored/team/b@{bundle}"),
            vec![source],
        )],
    );
    let (code, v, err) = validate(
        &ctx,
        &[
            cat.to_str().unwrap(),
            "--images",
            "--image-mirrors",
            idms.to_str().unwrap(),
        ],
    );
    assert_eq!((code, image_findings(&v)), (0, vec![]), "{err}\n{text}");
    assert!(manifest_gets(&relay).contains(&format!("/v2/mirrored/team/op/manifests/{op}")));
}

#[test]
fn changed_from_and_the_cache_ask_only_what_they_must() {
    let ctx = Ctx::new();
    let reg = Registry::http();
    let relay = relay(&reg);
    let h = format!("127.0.0.1:{}", relay.port);
    let d = |repo: &str, name: &str| format!("{h}/{repo}@{}", reg.push(repo, "v1", &img(name)));
    let (b1, b2, b3) = (d("b", "1"), d("b", "2"), d("b", "3"));
    let (r1, r2, r3) = (d("r1", "1"), d("r2", "2"), d("r3", "3"));
    reg.push("tagged", "v1", &img("t"));
    let tagged = format!("{h}/tagged:v1");
    let base = catalog(
        &ctx.path("base"),
        &[
            (
                "p.v1",
                "1.0.0",
                b1.clone(),
                vec![r1.clone(), tagged.clone()],
            ),
            ("p.v2", "2.0.0", b2.clone(), vec![r2.clone()]),
        ],
    );
    // p.v3 is new; p.v2 gains a related image; p.v1 is unchanged.
    let head = catalog(
        &ctx.path("head"),
        &[
            (
                "p.v1",
                "1.0.0",
                b1.clone(),
                vec![r1.clone(), tagged.clone()],
            ),
            ("p.v2", "2.0.0", b2.clone(), vec![r2.clone(), r3.clone()]),
            ("p.v3", "3.0.0", b3.clone(), vec![r3.clone()]),
        ],
    );
    let (hd, bs) = (head.to_str().unwrap(), base.to_str().unwrap());
    let (code, v, err) = validate(&ctx, &[hd, "--images", "--no-cache", "--changed-from", bs]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["images"]["bundles"], 2);
    let path = |r: &str| {
        let (repo, digest) = r
            .strip_prefix(&format!("{h}/"))
            .unwrap()
            .split_once('@')
            .unwrap();
        format!("/v2/{repo}/manifests/{digest}")
    };
    let mut want = vec![path(&b2), path(&r2), path(&r3), path(&b3)];
    want.sort();
    assert_eq!(
        manifest_gets(&relay),
        want,
        "only p.v2's and p.v3's images, each once"
    );

    // A full run fills the cache; a rerun asks only about the tag. (--no-cache asks every
    // time but still keeps what it found: start this part from an empty cache.)
    let _ = std::fs::remove_file(ctx.cache().join("image-checks.json"));
    relay.seen.lock().unwrap().clear();
    let (code, v, _) = validate(&ctx, &[hd, "--images"]);
    assert_eq!((code, v["images"]["images"].clone()), (0, 7.into()), "{v}");
    assert_eq!(manifest_gets(&relay).len(), 7);
    relay.seen.lock().unwrap().clear();
    let (code, v, _) = validate(&ctx, &[hd, "--images"]);
    assert_eq!(code, 0);
    assert_eq!(v["images"]["fromCache"], 6);
    assert_eq!(
        manifest_gets(&relay),
        vec!["/v2/tagged/manifests/v1".to_string()]
    );
    assert!(ctx.cache().join("image-checks.json").is_file());
    // --no-cache asks about everything again.
    relay.seen.lock().unwrap().clear();
    let (_, v, _) = validate(&ctx, &[hd, "--images", "--no-cache"]);
    assert_eq!(
        (
            manifest_gets(&relay).len(),
            v["images"]["fromCache"].clone()
        ),
        (7, 0.into())
    );
    // A base that cannot be read: validate's failure, not a finding.
    let (code, _, err) = ctx.run(&[
        "validate",
        hd,
        "--images",
        "--changed-from",
        "/nonexistent/base",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("/nonexistent/base"), "{err}");
}

#[test]
fn a_rerun_confirms_tags_by_their_repository_list() {
    let ctx = Ctx::new();
    let reg = Registry::http();
    let relay = relay(&reg);
    let h = format!("127.0.0.1:{}", relay.port);
    let b = format!("{h}/b@{}", reg.push("b", "v1", &img("b")));
    reg.push("many", "v1", &img("one"));
    let gone = reg.push("many", "v2", &img("two"));
    reg.push("solo", "v1", &img("solo"));
    let related = vec![
        format!("{h}/many:v1"),
        format!("{h}/many:v2"),
        format!("{h}/solo:v1"),
    ];
    let c = catalog(&ctx.path("c"), &[("p.v1", "1.0.0", b, related)]);
    let c = c.to_str().unwrap();
    let gets = |what: &str| gets(&relay, what);
    let (code, v, err) = validate(&ctx, &[c, "--images"]);
    assert_eq!(
        (code, v["images"]["images"].clone()),
        (0, 4.into()),
        "{err}"
    );
    // Each tagged image is single-platform: its config is read to learn its platform.
    assert_eq!(gets("/blobs/").len(), 3);
    assert_eq!(gets("/tags/list"), Vec::<String>::new());

    // The rerun: the two tags of `many` are confirmed by one tag list, `solo`'s only tag is
    // read (a list would cost the same), and no config is read again.
    relay.seen.lock().unwrap().clear();
    let (code, v, err) = validate(&ctx, &[c, "--images"]);
    assert_eq!(
        (code, v["images"]["fromCache"].clone()),
        (0, 3.into()),
        "{err}"
    );
    assert_eq!(
        gets("/manifests/"),
        vec!["/v2/solo/manifests/v1".to_string()]
    );
    assert_eq!(gets("/tags/list").len(), 1, "{:?}", gets("/tags/list"));
    assert_eq!(gets("/blobs/"), Vec::<String>::new());

    // A tag deleted at the registry is no longer listed: it is read, and reported missing.
    reg.delete_manifest("many", &gone);
    relay.seen.lock().unwrap().clear();
    let (code, v, _) = validate(&ctx, &[c, "--images"]);
    let missing: Vec<Value> = image_findings(&v)
        .into_iter()
        .filter(|f| f["rule"] == "image-missing")
        .collect();
    assert_eq!((code, missing.len()), (1, 1), "{v}");
    assert!(missing[0].to_string().contains("many:v2"), "{v}");
    assert!(gets("/manifests/").contains(&"/v2/many/manifests/v2".to_string()));
    assert!(!gets("/manifests/").contains(&"/v2/many/manifests/v1".to_string()));

    // --no-cache reads every tag again.
    relay.seen.lock().unwrap().clear();
    validate(&ctx, &[c, "--images", "--no-cache"]);
    assert_eq!(gets("/manifests/").len(), 4);
    assert_eq!(gets("/tags/list"), Vec::<String>::new());
}
