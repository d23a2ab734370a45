//! Deterministic synthetic FBC catalogs for the benchmarks.
//!
//! A catalog at scale S has `64·S` packages (fractions allowed for smoke runs). Package `i` is
//! generated from its own random stream, seeded by `(seed, i)` alone, so the same seed gives
//! the same bytes, and a catalog at a larger scale starts with exactly the packages of a
//! smaller one. The shape follows the community catalog: a heavy-tailed number of bundles per
//! package (median about 10, mean about 20, and every 64th package a 250-bundle chain), 1–4
//! channels with overlapping membership, replaces chains, some `skips` (a few of them naming
//! bundles that are not in the catalog), `skipRange` on about a quarter of the entries,
//! `olm.csv.metadata` blobs of a few KB to about 15 KB per bundle, and on one package in eight
//! `olm.bundle.object` blobs (a CSV and CRDs, base64) instead. One package in ten has
//! deprecations. Every catalog passes `opreg validate`.
//!
//! Output: one compact JSON object per line, per package: the package, its bundles, its
//! channels, its deprecations. No clock, no environment and no hash-map order is read.

use base64::Engine;
use serde_json::{json, Value};
use std::io::{self, Write};

/// SplitMix64: tiny, fast and fully specified, so streams never change with a crate version.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `per_mille / 1000`.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
    fn hex(&mut self, n: usize) -> String {
        const H: &[u8; 16] = b"0123456789abcdef";
        (0..n).map(|_| H[self.below(16) as usize] as char).collect()
    }
    /// `lo..=hi` random bytes.
    fn bytes(&mut self, lo: u64, hi: u64) -> Vec<u8> {
        let n = self.range(lo, hi);
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

const WORDS: &[&str] = &[
    "operator",
    "cluster",
    "manages",
    "deploys",
    "lifecycle",
    "backup",
    "restore",
    "scaling",
    "automatic",
    "upgrades",
    "monitoring",
    "metrics",
    "storage",
    "network",
    "policy",
    "secure",
    "database",
    "replica",
    "failover",
    "custom",
    "resource",
    "controller",
    "reconcile",
    "status",
    "configuration",
    "namespace",
    "tenant",
    "gateway",
    "certificate",
    "rotation",
    "observability",
    "streaming",
    "queue",
    "cache",
    "index",
    "search",
    "pipeline",
    "build",
    "registry",
    "mirror",
    "the",
    "and",
    "with",
    "for",
    "across",
    "using",
    "on",
    "of",
    "a",
    "in",
    "to",
    "every",
    "kubernetes",
    "openshift",
    "workload",
    "service",
    "endpoint",
    "volume",
    "snapshot",
    "schedule",
    "event",
    "alert",
    "dashboard",
    "quota",
];

fn sentence(r: &mut Rng) -> String {
    let n = r.range(6, 16) as usize;
    let mut s: Vec<&str> = (0..n).map(|_| *r.pick(WORDS)).collect();
    let mut first = s[0].to_string();
    first[..1].make_ascii_uppercase();
    s[0] = &first;
    format!("{}.", s.join(" "))
}

/// A paragraph of `lo..=hi` sentences.
fn paragraph(r: &mut Rng, lo: u64, hi: u64) -> String {
    let n = r.range(lo, hi);
    (0..n).map(|_| sentence(r)).collect::<Vec<_>>().join(" ")
}

fn word_name(r: &mut Rng) -> String {
    let w = loop {
        let w = *r.pick(WORDS);
        if w.len() > 3 {
            break w;
        }
    };
    w.to_string()
}

#[derive(Clone, Copy)]
struct Ver(u64, u64, u64);

impl std::fmt::Display for Ver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// Number of packages at a scale.
pub fn packages_at(scale: f64) -> usize {
    ((64.0 * scale).round() as usize).max(1)
}

/// Writes the catalog with `packages` packages.
pub fn write_catalog(out: &mut dyn Write, seed: u64, packages: usize) -> io::Result<()> {
    for i in 0..packages {
        let mut r = Rng::new(seed ^ (i as u64).wrapping_mul(0xA24B_AED4_963E_E407));
        for _ in 0..4 {
            r.next_u64();
        }
        for v in package(&mut r, i) {
            serde_json::to_writer(&mut *out, &v)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

struct Kind {
    group: String,
    version: String,
    kind: String,
    plural: String,
}

fn bundle_count(r: &mut Rng, i: usize) -> usize {
    if i.is_multiple_of(64) {
        return 250;
    }
    let (lo, hi) = match r.below(100) {
        0..=29 => (1, 5),
        30..=59 => (6, 12),
        60..=79 => (13, 25),
        80..=91 => (26, 50),
        92..=97 => (51, 100),
        _ => (101, 200),
    };
    r.range(lo, hi) as usize
}

/// Every document of package `i`.
fn package(r: &mut Rng, i: usize) -> Vec<Value> {
    let name = format!("synth-{}-{}-{i}", word_name(r), word_name(r));
    let n = bundle_count(r, i);
    let objects = r.chance(125);
    let domain = format!("{}.{}.example.io", word_name(r), word_name(r));
    let kinds: Vec<Kind> = (0..r.range(1, 12))
        .map(|k| {
            let base = word_name(r);
            let kind = format!("{}{}{k}", base[..1].to_uppercase(), &base[1..]);
            Kind {
                group: domain.clone(),
                version: r.pick(&["v1", "v1beta1", "v1alpha1", "v2"]).to_string(),
                plural: format!("{}s", kind.to_lowercase()),
                kind,
            }
        })
        .collect();
    let description = paragraph(r, 8, 30);
    let provider = format!("{} {} Inc.", word_name(r), word_name(r));
    let maintainers: Vec<Value> = (0..r.range(1, 4))
        .map(|_| {
            let n = word_name(r);
            json!({"name": n, "email": format!("{n}@{domain}")})
        })
        .collect();

    // Versions, ascending: mostly patch bumps, some minor, a few major.
    let mut versions = Vec::with_capacity(n);
    let mut v = Ver(r.below(2), r.below(6), 0);
    for _ in 0..n {
        versions.push(v);
        v = match r.below(100) {
            0..=69 => Ver(v.0, v.1, v.2 + 1),
            70..=94 => Ver(v.0, v.1 + 1, 0),
            _ => Ver(v.0 + 1, 0, 0),
        };
    }
    let bname = |k: usize| format!("{name}.v{}", versions[k]);

    let mut docs = Vec::new();
    let icon = base64::engine::general_purpose::STANDARD.encode(r.bytes(2_000, 20_000));
    docs.push(json!({
        "schema": "olm.package",
        "name": name,
        "defaultChannel": "stable",
        "description": paragraph(r, 3, 12),
        "icon": {"base64data": icon, "mediatype": "image/png"},
    }));

    for (k, ver) in versions.iter().enumerate() {
        let bundle = bname(k);
        // Later versions provide more of the package's kinds.
        let provided = &kinds[..(1 + k * kinds.len() / n).min(kinds.len())];
        let mut props = vec![
            json!({"type": "olm.package", "value": {"packageName": name, "version": ver.to_string()}}),
        ];
        for kd in provided {
            props.push(json!({"type": "olm.gvk", "value": {"group": kd.group, "kind": kd.kind, "version": kd.version}}));
        }
        if r.chance(30) {
            props.push(json!({"type": "olm.gvk.required", "value": {"group": "monitoring.example.io", "kind": "ServiceMonitor", "version": "v1"}}));
        }
        if r.chance(30) {
            props.push(json!({"type": "olm.package.required", "value": {"packageName": "synth-dependency", "versionRange": ">=1.0.0"}}));
        }
        let image = format!(
            "registry.example.invalid/{name}/bundle@sha256:{}",
            r.hex(64)
        );
        let operator_image = format!(
            "registry.example.invalid/{name}/operator@sha256:{}",
            r.hex(64)
        );
        let examples: Vec<Value> = provided
            .iter()
            .map(|kd| {
                let spec: serde_json::Map<String, Value> = (0..r.range(2, 10))
                    .map(|f| (format!("{}{f}", word_name(r)), json!(r.range(1, 1000))))
                    .collect();
                json!({"apiVersion": format!("{}/{}", kd.group, kd.version), "kind": kd.kind,
                       "metadata": {"name": format!("{}-sample", kd.plural)}, "spec": spec})
            })
            .collect();
        let annotations = json!({
            "alm-examples": serde_json::to_string_pretty(&examples).unwrap(),
            "capabilities": r.pick(&["Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights"]),
            "categories": r.pick(&["Database", "Monitoring", "Networking", "Security", "Storage"]),
            "containerImage": operator_image,
            "createdAt": format!("2024-{:02}-{:02}T00:00:00Z", 1 + (k % 12), 1 + (k % 28)),
            "repository": format!("https://git.example.invalid/{name}"),
            "support": provider,
        });
        let owned: Vec<Value> = provided
            .iter()
            .map(|kd| {
                json!({"name": format!("{}.{}", kd.plural, kd.group), "version": kd.version,
                             "kind": kd.kind, "displayName": kd.kind, "description": sentence(r)})
            })
            .collect();
        let csv_desc = format!(
            "{description}\n\n## Version {ver}\n\n{}",
            paragraph(r, 1, 6)
        );
        let install_modes = json!([
            {"type": "OwnNamespace", "supported": true},
            {"type": "SingleNamespace", "supported": true},
            {"type": "MultiNamespace", "supported": false},
            {"type": "AllNamespaces", "supported": true},
        ]);
        if objects {
            let mut csv = json!({
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "ClusterServiceVersion",
                "metadata": {"name": bundle, "annotations": annotations},
                "spec": {
                    "displayName": name, "description": csv_desc, "version": ver.to_string(),
                    "provider": {"name": provider}, "maintainers": maintainers,
                    "installModes": install_modes, "customresourcedefinitions": {"owned": owned},
                    "install": {"strategy": "deployment", "spec": {"deployments": [{
                        "name": format!("{name}-controller"),
                        "spec": {"replicas": 1, "template": {"spec": {"containers": [{
                            "name": "manager", "image": operator_image,
                            "args": ["--leader-elect", "--metrics-bind-address=:8080"],
                        }]}}},
                    }]}},
                },
            });
            if k > 0 {
                csv["spec"]["replaces"] = json!(bname(k - 1));
            }
            props.push(bundle_object(&csv));
            for kd in provided.iter().take(3) {
                let fields: serde_json::Map<String, Value> = (0..r.range(10, 40))
                    .map(|f| (format!("{}{f}", word_name(r)),
                              json!({"type": r.pick(&["string", "integer", "boolean"]), "description": sentence(r)})))
                    .collect();
                let crd = json!({
                    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": format!("{}.{}", kd.plural, kd.group)},
                    "spec": {"group": kd.group, "names": {"kind": kd.kind, "plural": kd.plural},
                             "scope": "Namespaced", "versions": [{"name": kd.version, "served": true, "storage": true,
                             "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": fields}}}}}]},
                });
                props.push(bundle_object(&crd));
            }
        } else {
            props.push(json!({"type": "olm.csv.metadata", "value": {
                "annotations": annotations,
                "apiServiceDefinitions": {},
                "crdDescriptions": {"owned": owned},
                "description": csv_desc,
                "displayName": name,
                "installModes": install_modes,
                "keywords": [word_name(r), word_name(r)],
                "labels": {"operatorframework.io/arch.amd64": "supported"},
                "links": [{"name": "Documentation", "url": format!("https://docs.example.invalid/{name}/{ver}")}],
                "maintainers": maintainers,
                "maturity": r.pick(&["alpha", "beta", "stable"]),
                "minKubeVersion": "1.21.0",
                "provider": {"name": provider},
            }}));
        }
        let mut related = vec![
            json!({"name": "", "image": image}),
            json!({"name": "operator", "image": operator_image}),
        ];
        for j in 0..r.below(3) {
            related.push(json!({"name": format!("operand-{j}"), "image": format!("registry.example.invalid/{name}/operand-{j}@sha256:{}", r.hex(64))}));
        }
        docs.push(json!({
            "schema": "olm.bundle", "name": bundle, "package": name, "image": image,
            "properties": props, "relatedImages": related,
        }));
    }

    // Channels. "stable" holds every bundle in one replaces chain (so nothing is stranded);
    // "fast" the newer half; "stable-vM" each major's bundles.
    let chain = |r: &mut Rng, ks: &[usize]| -> Vec<Value> {
        let mut out = Vec::with_capacity(ks.len());
        let mut last_skipper = 0;
        for (j, &k) in ks.iter().enumerate() {
            let mut e = serde_json::Map::new();
            e.insert("name".into(), json!(bname(k)));
            if j > 0 {
                // Usually the previous entry. Sometimes jump back over 1–3 entries and skip
                // them (as etcd's 0.9.2 replaces 0.9.0 and skips 0.9.1). The jump target must
                // not be skipped itself, or the replaces walk would stop there and strand
                // everything below it.
                let m = if r.chance(120) {
                    r.range(1, 3) as usize
                } else {
                    0
                };
                let m = if m > 0 && j > m && j - 1 - m >= last_skipper {
                    m
                } else {
                    0
                };
                e.insert("replaces".into(), json!(bname(ks[j - 1 - m])));
                if m > 0 {
                    let mut skips: Vec<Value> = (j - m..j).map(|i| json!(bname(ks[i]))).collect();
                    if r.chance(250) {
                        // A skipped release that never made it into the catalog.
                        skips.push(json!(format!("{name}.v{}-hotfix", versions[k])));
                    }
                    e.insert("skips".into(), Value::Array(skips));
                    last_skipper = j;
                }
            }
            if r.chance(250) {
                let back = r.range(1, 4) as usize;
                let lo = if j >= back {
                    versions[ks[j - back]].to_string()
                } else {
                    "0.0.0".into()
                };
                e.insert(
                    "skipRange".into(),
                    json!(format!(">={lo} <{}", versions[k])),
                );
            }
            out.push(Value::Object(e));
        }
        out
    };
    let all: Vec<usize> = (0..n).collect();
    let mut channels = vec![("stable".to_string(), chain(r, &all))];
    if n >= 4 && r.chance(500) {
        channels.push(("fast".to_string(), chain(r, &all[n / 2..])));
    }
    if n >= 10 && r.chance(400) {
        let mut majors: Vec<u64> = versions.iter().map(|v| v.0).collect();
        majors.dedup();
        for m in majors {
            let ks: Vec<usize> = all
                .iter()
                .copied()
                .filter(|&k| versions[k].0 == m)
                .collect();
            channels.push((format!("stable-v{m}"), chain(r, &ks)));
        }
    }
    for (ch, entries) in &channels {
        docs.push(
            json!({"schema": "olm.channel", "name": ch, "package": name, "entries": entries}),
        );
    }
    if n >= 3 && r.chance(100) {
        let mut entries = vec![
            json!({"reference": {"schema": "olm.bundle", "name": bname(0)},
                                      "message": format!("{} is no longer supported. {}", bname(0), sentence(r))}),
        ];
        if channels.len() > 1 {
            entries.push(
                json!({"reference": {"schema": "olm.channel", "name": channels[1].0},
                                "message": format!("channel {} is deprecated.", channels[1].0)}),
            );
        }
        docs.push(json!({"schema": "olm.deprecations", "package": name, "entries": entries}));
    }
    docs
}

fn bundle_object(v: &Value) -> Value {
    let data = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(v).unwrap());
    json!({"type": "olm.bundle.object", "value": {"data": data}})
}
