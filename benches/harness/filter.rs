//! `opreg mirror`'s plan of a 20-package ImageSetConfiguration over the community catalog
//! (`scripts/bench.sh --filter`). The issue's target: under 2 s and under 150 MB peak.
//!
//! The catalog is the corpus's repaired copy (see corpus.rs), pushed as a one-layer catalog
//! image to a registry on loopback (image.rs), and the configuration names it by tag, as a user
//! names `quay.io/operatorhubio/catalog:latest`. Each round runs `examples/mirror_plan.rs` (the
//! library's `mirror::plan::plan`, in a process set up as the `opreg` binary is) twice: with an
//! empty image cache (the pin, the pull, unpacking, reading and validating the whole catalog,
//! the filter, dependencies, heads and the filtered catalog's validation), then with the cache
//! that run filled (a rerun: the pin, then the same without the download). A dry run would go
//! on to inspect every planned image at its source registry; that is the network's time, not
//! the filter's, and is left out. For reference, each round also runs `opreg validate REF` with
//! an empty cache: the same pull and whole-catalog read, nothing filtered.

use crate::image::Pushed;
use crate::measure::median;
use crate::procs::{run_child, ChildStats};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The configuration; `CATALOG` is replaced by the pushed image's reference. The first eight
/// packages keep bundles with `olm.package.required` or `olm.gvk.required` properties (met by
/// other packages of the catalog, listed or added, except those of `eclipse-che` and
/// `l5-operator`, whose required packages the catalog lacks: the resolver warns); the entries
/// mix plain packages, listed channels, channel and package version ranges and
/// `defaultChannel`.
pub const CONFIG: &str = "\
apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: CATALOG
    packages:
    - name: kuadrant-operator
    - name: rabbitmq-messaging-topology-operator
      channels:
      - name: stable
        minVersion: 1.15.0
    - name: pelorus-operator
    - name: alloydb-omni-operator
      minVersion: 1.6.0
      maxVersion: 1.8.0
    - name: node-healthcheck-operator
      channels:
      - name: stable
        minVersion: 0.7.0
    - name: kogito-operator
      channels:
      - name: 1.x
        minVersion: 0.14.0
    - name: eclipse-che
      channels:
      - name: stable
        minVersion: 7.115.0
    - name: l5-operator
    - name: hive-operator
      defaultChannel: ocm-2.4
      channels:
      - name: ocm-2.4
        minVersion: 1.0.10
    - name: project-quay
      channels:
      - name: stable-3.18
      - name: stable-3.17
    - name: keycloak-operator
      channels:
      - name: fast
        minVersion: 26.0.0
    - name: opentelemetry-operator
      minVersion: 0.140.0
      maxVersion: 0.150.0
    - name: strimzi-kafka-operator
    - name: camel-k
      channels:
      - name: stable-v2
      - name: latest
    - name: cert-manager
    - name: external-secrets-operator
      defaultChannel: stable
      channels:
      - name: stable
        minVersion: 0.10.0
    - name: ack-s3-controller
      minVersion: 1.5.0
    - name: gitlab-operator-kubernetes
      channels:
      - name: stable
        minVersion: 3.0.0
    - name: jaeger
    - name: infinispan
      channels:
      - name: stable
        minVersion: 2.5.0
";

/// The targets: seconds and bytes.
const TARGET_SECS: f64 = 2.0;
const TARGET_BYTES: f64 = 150e6;

/// The plan program: `OPREG_BENCH_PLAN_BIN`, else the example built beside this harness
/// (`cargo build --release --example mirror-plan`).
pub fn plan_bin() -> PathBuf {
    std::env::var_os("OPREG_BENCH_PLAN_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            // target/<profile>/deps/harness-<hash> -> target/<profile>/examples/mirror-plan
            let me = std::env::current_exe().expect("current exe");
            let profile = me.parent().and_then(Path::parent).expect("target dir");
            profile.join("examples/mirror-plan")
        })
}

/// One run of `cmd` with `--use-http --image-cache CACHE` added.
fn once(mut cmd: Command, cache: &Path, dir: &Path) -> Result<ChildStats, String> {
    cmd.arg("--use-http")
        .arg("--image-cache")
        .arg(cache)
        .env_remove("OPREG_SIGNATURE_POLICY");
    run_child(&mut cmd, &dir.join("child.stderr"))
}

/// The plan's runs, and the reference's.
struct Runs {
    cold: Vec<ChildStats>,
    warm: Vec<ChildStats>,
    /// `opreg validate REF`, cold.
    validate: Vec<ChildStats>,
}

/// Pushes `catalog` (repaired) and plans [`CONFIG`] `rounds` times cold and warm, each round
/// also `opreg validate`-ing the whole image cold (`opreg`: that binary); returns the report
/// section.
pub fn measure(
    plan: &Path,
    opreg: &Path,
    catalog: &Path,
    work: &Path,
    rounds: usize,
) -> Result<String, String> {
    if !plan.is_file() {
        return Err(format!(
            "{}: not built (cargo build --release --example mirror-plan)",
            plan.display()
        ));
    }
    let repaired = crate::corpus::repaired_copy(catalog, &work.join("corpus"))
        .map_err(|e| format!("writing the repaired corpus copy: {e}"))?;
    let pushed = Pushed::new(&repaired, work)?;
    let dir = work.join("filter");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let config = dir.join("imageset.yaml");
    std::fs::write(&config, CONFIG.replace("CATALOG", &pushed.reference))
        .map_err(|e| e.to_string())?;
    let summary = dir.join("summary.json");
    let cache = dir.join("cache");
    let mut runs = Runs {
        cold: Vec::new(),
        warm: Vec::new(),
        validate: Vec::new(),
    };
    for _ in 0..rounds.max(1) {
        let planning = || {
            let mut c = Command::new(plan);
            c.arg(&config).arg("--summary").arg(&summary);
            c
        };
        let _ = std::fs::remove_dir_all(&cache);
        runs.cold.push(once(planning(), &cache, &dir)?);
        runs.warm.push(once(planning(), &cache, &dir)?);
        let _ = std::fs::remove_dir_all(&cache);
        let mut validate = Command::new(opreg);
        validate.arg("validate").arg(&pushed.reference);
        runs.validate.push(once(validate, &cache, &dir)?);
    }
    let summary = std::fs::read_to_string(&summary).map_err(|e| e.to_string())?;
    let summary: serde_json::Value = serde_json::from_str(&summary).map_err(|e| e.to_string())?;
    Ok(section(catalog, &summary, &runs))
}

/// Some runs in figures: the median wall time, the lowest and highest, the median CPU time and
/// the highest peak RSS in bytes.
struct Figures {
    wall: f64,
    lo: f64,
    hi: f64,
    cpu: f64,
    peak: f64,
}

fn figures(runs: &[ChildStats]) -> Figures {
    let secs = |f: fn(&ChildStats) -> f64| runs.iter().map(f).collect::<Vec<_>>();
    let walls = secs(|r| r.wall.as_secs_f64());
    Figures {
        wall: median(&walls),
        lo: walls.iter().copied().fold(f64::MAX, f64::min),
        hi: walls.iter().copied().fold(0.0, f64::max),
        cpu: median(&secs(|r| r.cpu.as_secs_f64())),
        peak: runs.iter().map(|r| r.maxrss_kb).max().unwrap_or(0) as f64 * 1024.0,
    }
}

impl Figures {
    fn wall(&self) -> String {
        format!(
            "{:.3} s ({:.3}-{:.3}; CPU {:.3} s)",
            self.wall, self.lo, self.hi, self.cpu
        )
    }
    fn peak(&self) -> String {
        format!(
            "{:.1} MB ({:.1} MiB)",
            self.peak / 1e6,
            self.peak / 1048576.0
        )
    }
}

/// The two target rows of one kind of run.
fn rows(label: &str, runs: &[ChildStats]) -> String {
    let f = figures(runs);
    let met = |ok: bool| if ok { "MET" } else { "NOT MET" };
    let n = runs.len();
    format!(
        "| {label}: wall, median of {n} | < 2 s | {} | {} |\n\
         | {label}: peak RSS, highest of {n} | < 150 MB | {} | {} |\n",
        f.wall(),
        met(f.wall < TARGET_SECS),
        f.peak(),
        met(f.peak < TARGET_BYTES),
    )
}

fn section(catalog: &Path, s: &serde_json::Value, runs: &Runs) -> String {
    let name = catalog.file_name().unwrap_or_default().to_string_lossy();
    let n = |k: &str| s[k].as_u64().unwrap_or(0);
    let list = |k: &str| s[k].as_array().cloned().unwrap_or_default();
    let added: Vec<String> = list("added")
        .iter()
        .map(|b| format!("`{}`", b.as_str().unwrap_or("")))
        .collect();
    let mut out = format!(
        "\n## Mirror: filtering the community catalog\n\n\
         Target: filtering the community catalog with a 20-package configuration takes under 2 s \
         and under 150 MB peak. Measured: `opreg mirror`'s plan (`examples/mirror_plan.rs`: the \
         library's `mirror::plan::plan` in a process set up as the `opreg` binary is) of the \
         configuration below, the catalog `{name}` (icons repaired) pushed as a one-layer catalog \
         image to Debian's `docker-registry` on loopback and named by tag. The plan pins the tag to \
         a digest, pulls and unpacks the image, reads and validates the whole catalog, filters it, \
         adds dependencies, repairs channel heads, validates the result and lists the images; a \
         dry run would go on to inspect each listed image at its source registry (the network's \
         time, left out). Cold: an empty image cache; warm: the cache the cold run filled (a \
         rerun). {} rounds, each a cold and a warm run and the reference below; peak RSS is the \
         child's VmHWM.\n\n\
         | bundles in the source | in the filtered catalog (packages) | added for dependencies | images listed | warnings |\n\
         |---|---|---|---|---|\n\
         | {} | {} ({}) | {} | {} | {} |\n\n\
         Added for dependencies: {}.\n\n\
         | target | limit | measured | met |\n|---|---|---|---|\n",
        runs.cold.len(),
        n("bundlesInSource"),
        n("bundlesKept"),
        n("packagesKept"),
        added.len(),
        n("images"),
        list("warnings").len(),
        added.join(", "),
    );
    out.push_str(&rows("cold", &runs.cold));
    out.push_str(&rows("warm", &runs.warm));
    let v = figures(&runs.validate);
    out.push_str(&format!(
        "\nFor reference, reading the same image without filtering: `opreg validate REF` with an \
         empty image cache (the pull, unpacking, reading and validating the whole catalog), \
         {}, peak RSS {}.\n",
        v.wall(),
        v.peak()
    ));
    out.push_str("\nThe configuration (`CATALOG`: the pushed image's reference):\n\n```yaml\n");
    out.push_str(CONFIG);
    out.push_str("```\n");
    out
}
