//! `opreg validate --images` with the real binary against Debian's `docker-registry` on
//! loopback (plain HTTP behind the fault relay, TLS with basic auth, TLS behind a private CA),
//! with images made here: present, missing, an index lacking arm64, a bundle image that is an
//! index. `skopeo` checks independently what the registry holds; the relay counts requests.

use crate::registry_support;

use registry_support::ctx::Ctx;
use registry_support::faults::{Action, Faults, Seen};
use registry_support::pki::Pki;
use registry_support::{auth_file, Entry, Image, Registry, PASSWORD, USER};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const ZERO: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

fn img(arch: &'static str, name: &str) -> Image {
    Image::new(&[])
        .arch(arch)
        .layer(&[Entry::File(name.to_string(), name.as_bytes().to_vec())])
}

/// One bundle of package `p`: (name, version, image, related images, CSV labels).
struct B<'a>(&'a str, &'a str, String, Vec<String>, &'a str);

/// A catalog of package `p`, every bundle in channel `stable` (each skipping the others).
fn catalog(dir: &Path, bundles: &[B]) -> PathBuf {
    let mut y = String::from(
        "---\nschema: olm.package\nname: p\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n",
    );
    for (i, b) in bundles.iter().enumerate() {
        y += &format!("  - name: {}\n", b.0);
        if i > 0 {
            y += &format!("    replaces: {}\n", bundles[i - 1].0);
        }
    }
    for B(name, version, image, related, labels) in bundles {
        y += &format!("---\nschema: olm.bundle\npackage: p\nname: {name}\nimage: {image}\n");
        y += "properties:\n";
        y += &format!("  - type: olm.package\n    value: {{packageName: p, version: {version}}}\n");
        y += &format!("  - type: olm.csv.metadata\n    value: {{labels: {{{labels}}}}}\n");
        y += "relatedImages:\n";
        for r in related {
            y += &format!("  - image: {r}\n");
        }
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("catalog.yaml"), y).unwrap();
    dir.to_path_buf()
}

/// Runs validate -o json; returns (exit code, the report, stderr).
fn validate(ctx: &Ctx, args: &[&str], env: &[(&str, &Path)]) -> (i32, Value, String) {
    let mut all = vec!["validate", "-o", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = ctx.run_env(&all, env);
    assert!(!err.contains("panicked"), "{err}");
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v, err)
}

/// The image findings as (rule, bundle, image).
fn findings(v: &Value) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d.get("image").is_some())
        .map(|d| {
            (
                d["rule"].as_str().unwrap().to_string(),
                d["bundle"].as_str().unwrap().to_string(),
                d["image"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn f(rule: &str, bundle: &str, image: &str) -> (String, String, String) {
    (rule.into(), bundle.into(), image.into())
}

/// `skopeo inspect --raw` of a reference on a plain-HTTP or self-signed registry.
fn skopeo_raw(reference: &str) -> Result<Value, String> {
    let out = Command::new("skopeo")
        .args([
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{reference}"),
        ])
        .output()
        .expect("skopeo is installed");
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Manifest GETs the relay passed on or answered, per repository path fragment.
fn manifest_gets(relay: &Faults, fragment: &str) -> usize {
    relay
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(s, _)| {
            s.method == "GET" && s.path.contains(fragment) && s.path.contains("/manifests/")
        })
        .count()
}

#[test]
fn each_rule_fires_where_it_should_with_429_and_a_reset_survived() {
    let ctx = Ctx::new();
    let reg = Registry::http();
    let first_op = Arc::new(AtomicUsize::new(0));
    let first_full = Arc::new(AtomicUsize::new(0));
    let (a, b) = (first_op.clone(), first_full.clone());
    let relay = Faults::start(
        reg.port,
        Box::new(move |s: &Seen, _| {
            if s.path.contains("/ns/op/manifests/") && a.fetch_add(1, Ordering::SeqCst) == 0 {
                return Action::Answer(429, vec![("Retry-After".into(), "1".into())]);
            }
            if s.path.contains("/ns/full/manifests/") && b.fetch_add(1, Ordering::SeqCst) == 0 {
                return Action::Reset;
            }
            Action::Relay
        }),
    );
    let h = format!("127.0.0.1:{}", relay.port);
    let op = reg.push("ns/op", "v1", &img("amd64", "op"));
    let amd_only = reg.push_index("ns/amd", "v1", &[("linux", "amd64", &img("amd64", "a"))]);
    let full = reg.push_index(
        "ns/full",
        "v1",
        &[
            ("linux", "amd64", &img("amd64", "f1")),
            ("linux", "arm64", &img("arm64", "f2")),
        ],
    );
    let b1 = reg.push("ns/bundle", "1", &img("amd64", "b1"));
    let b2 = reg.push_index("ns/bundle", "2", &[("linux", "amd64", &img("amd64", "b2"))]);
    let other = reg.push("other/op", "v1", &img("amd64", "x"));
    let at = |repo: &str, d: &str| format!("{h}/{repo}@{d}");
    let arm = r#""operatorframework.io/arch.amd64": supported, "operatorframework.io/arch.arm64": supported"#;
    let cat = catalog(
        &ctx.path("cat"),
        &[
            // Declares arm64: the amd64-only index and the amd64 image lack it; the full index
            // serves it; the bundle's own image is never held to the platforms.
            B(
                "p.v1",
                "1.0.0",
                at("ns/bundle", &b1),
                vec![
                    at("ns/bundle", &b1),
                    at("ns/amd", &amd_only),
                    at("ns/full", &full),
                    at("ns/op", &op),
                ],
                arm,
            ),
            // linux/amd64 by default: a tag (unpinned), a repository and a manifest that do not
            // exist, an image outside the allowed namespace; the bundle image is an index.
            B(
                "p.v2",
                "2.0.0",
                at("ns/bundle", &b2),
                vec![
                    format!("{h}/ns/op:v1"),
                    at("ns/ghost", ZERO),
                    at("ns/op", ZERO),
                    at("other/op", &other),
                    at("ns/amd", &amd_only),
                ],
                "",
            ),
        ],
    );
    let allowed = format!("{h}/ns");
    let args = [
        cat.to_str().unwrap(),
        "--images",
        "--use-http",
        "--allowed-registries",
        &allowed,
    ];
    let (code, v, err) = validate(&ctx, &args, &[]);
    assert_eq!(code, 1, "{v} {err}");
    assert_eq!(
        findings(&v),
        vec![
            f("bundle-image-multi-arch", "p.v2", &at("ns/bundle", &b2)),
            f("image-missing", "p.v2", &at("ns/ghost", ZERO)),
            f("image-missing", "p.v2", &at("ns/op", ZERO)),
            f("image-platform-missing", "p.v1", &at("ns/amd", &amd_only)),
            f("image-platform-missing", "p.v1", &at("ns/op", &op)),
            f(
                "image-registry-not-allowed",
                "p.v2",
                &at("other/op", &other)
            ),
            f("image-unpinned", "p.v2", &format!("{h}/ns/op:v1")),
        ],
        "{err}"
    );
    let d = |rule: &str, image: &str| -> Value {
        v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["rule"] == rule && d["image"] == image)
            .cloned()
            .unwrap()
    };
    let ghost = d("image-missing", &at("ns/ghost", ZERO));
    assert_eq!(ghost["package"], "p");
    assert_eq!(ghost["severity"], "error");
    // A repository the registry never had: docker-registry answers MANIFEST_UNKNOWN for a
    // digest there (a registry may say NAME_UNKNOWN); either is missing, with its code named.
    let said = ghost["message"].as_str().unwrap();
    assert!(
        said.contains("(MANIFEST_UNKNOWN)") || said.contains("(NAME_UNKNOWN)"),
        "{ghost}"
    );
    let gone = d("image-missing", &at("ns/op", ZERO));
    assert!(
        gone["message"]
            .as_str()
            .unwrap()
            .contains("MANIFEST_UNKNOWN"),
        "{gone}"
    );
    let amd = d("image-platform-missing", &at("ns/amd", &amd_only));
    assert!(
        amd["message"]
            .as_str()
            .unwrap()
            .contains("does not serve linux/arm64"),
        "{amd}"
    );
    assert_eq!(
        d("image-unpinned", &format!("{h}/ns/op:v1"))["severity"],
        "warning"
    );
    assert_eq!(v["images"]["images"], 9);
    assert_eq!(v["images"]["findings"]["image-missing"], 2);
    assert_eq!(v["images"]["failuresByRegistry"][&h], 2);
    // The 429 was waited out and the reset tried again: both images answered.
    assert_eq!(relay.count("answered"), 1);
    assert_eq!(relay.count("reset"), 1);

    // skopeo sees the registry the same way.
    let raw = skopeo_raw(&format!("{}/ns/amd@{amd_only}", reg.host())).unwrap();
    let arches: Vec<&str> = raw["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["platform"]["architecture"].as_str().unwrap())
        .collect();
    assert_eq!(arches, vec!["amd64"]);
    assert!(skopeo_raw(&format!("{}/ns/ghost@{ZERO}", reg.host())).is_err());
    assert!(skopeo_raw(&format!("{}/ns/op@{ZERO}", reg.host())).is_err());
    assert!(skopeo_raw(&format!("{}/ns/bundle@{b2}", reg.host())).unwrap()["manifests"].is_array());

    // Text: the same findings, with package, bundle and image named, and a summary. The
    // relay's faults are spent, so its count is the lookups alone: each image once, however
    // many bundles name it (ns/amd is named by both).
    relay.seen.lock().unwrap().clear();
    let (code, _, err) = ctx.run(&[&["validate"], &args[..], &["--no-cache"]].concat());
    assert_eq!(code, 1, "{err}");
    assert_eq!(manifest_gets(&relay, "/ns/amd/"), 1);
    assert!(
        err.contains(&format!(
            "error[image-missing]: package \"p\", bundle \"p.v2\", image \"{}\"",
            at("ns/ghost", ZERO)
        )),
        "{err}"
    );
    assert!(err.contains("images: 9 checked from 2 bundle(s)"), "{err}");
    // --require-digests makes the tag an error; without the failing images only warnings stay.
    let clean = catalog(
        &ctx.path("clean"),
        &[B(
            "p.v1",
            "1.0.0",
            at("ns/bundle", &b1),
            vec![format!("{h}/ns/op:v1")],
            "",
        )],
    );
    let c = clean.to_str().unwrap();
    let (code, v, _) = validate(&ctx, &[c, "--images", "--use-http"], &[]);
    assert_eq!((code, findings(&v).len()), (0, 1), "{v}");
    let (code, _, _) = validate(
        &ctx,
        &[c, "--images", "--use-http", "--require-digests"],
        &[],
    );
    assert_eq!(code, 1);
    let (code, _, _) = validate(
        &ctx,
        &[c, "--images", "--use-http", "--warnings-as-errors"],
        &[],
    );
    assert_eq!(code, 1);
    // Without --images nothing is looked up; the image flags need it.
    let before = relay.seen.lock().unwrap().len();
    let (code, v, _) = validate(&ctx, &[cat.to_str().unwrap()], &[]);
    assert_eq!((code, v["images"].clone()), (0, Value::Null));
    assert_eq!(relay.seen.lock().unwrap().len(), before);
    let (code, _, _) = ctx.run(&["validate", c, "--parallel", "4"]);
    assert_eq!(code, 2);
}

#[test]
fn denied_is_never_missing_and_credentials_tell_them_apart() {
    let ctx = Ctx::new();
    let reg = Registry::tls_auth();
    let h = reg.host();
    let d = reg.push("ns/op", "v1", &img("amd64", "op"));
    let cat = catalog(
        &ctx.path("cat"),
        &[B(
            "p.v1",
            "1.0.0",
            format!("{h}/ns/op@{d}"),
            vec![format!("{h}/ns/nothing@{d}")],
            "",
        )],
    );
    let args = [cat.to_str().unwrap(), "--images", "--skip-tls-verify"];
    let (code, v, _) = validate(&ctx, &args, &[]);
    assert_eq!(code, 1);
    let rules: Vec<String> = findings(&v).into_iter().map(|f| f.0).collect();
    assert_eq!(rules, vec!["image-unreachable", "image-unreachable"], "{v}");
    let msg = v["diagnostics"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("denied") || msg.contains("unauthorized"),
        "{msg}"
    );
    // With credentials: the present image passes, the absent repository is missing.
    let auth = ctx.path("auth.json");
    std::fs::write(&auth, auth_file(&h, USER, PASSWORD)).unwrap();
    let (code, v, _) = validate(&ctx, &args, &[("REGISTRY_AUTH_FILE", &auth)]);
    assert_eq!(code, 1);
    assert_eq!(
        findings(&v),
        vec![f("image-missing", "p.v1", &format!("{h}/ns/nothing@{d}"))]
    );
}

#[test]
fn a_registry_behind_a_private_ca_is_unreachable_until_its_ca_is_trusted() {
    let ctx = Ctx::new();
    let pki = Pki::new(&ctx.path("pki"));
    let reg = Registry::private_ca(&pki, false);
    let d = reg.push("ns/op", "v1", &img("amd64", "op"));
    let r = format!("{}/ns/op@{d}", reg.host());
    let cat = catalog(
        &ctx.path("cat"),
        &[B("p.v1", "1.0.0", r.clone(), vec![], "")],
    );
    let c = cat.to_str().unwrap();
    let (code, v, _) = validate(&ctx, &[c, "--images"], &[]);
    assert_eq!(code, 1);
    assert_eq!(findings(&v), vec![f("image-unreachable", "p.v1", &r)]);
    let msg = v["diagnostics"][0]["message"].as_str().unwrap();
    assert!(msg.contains("certificate"), "{msg}");
    let ca = pki.ca_only_dir();
    let (code, v, err) = validate(
        &ctx,
        &[c, "--images", "--cert-dir", ca.to_str().unwrap()],
        &[],
    );
    assert_eq!((code, findings(&v)), (0, vec![]), "{err}");
}
