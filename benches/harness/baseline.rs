//! The main figures of two builds of opreg, measured in the same run and alternately: the
//! build under test and a baseline build (`scripts/bench.sh` builds one from an earlier commit;
//! by default the last build before this release's changes). Figures taken on different
//! days move with the machine (the parse floor itself moved by 40 % between two runs), so
//! "no figure worse than before" is only checkable side by side. A third build in between
//! (`--step`, a commit whose change is to be told apart) is compared with the same baseline in a
//! section of its own, and a closing line names the figures worse in this build only, i.e.
//! changed after that commit ([`attribution`]).
//!
//! Each build ingests the catalog into a database of its own (the schema differs between
//! versions); the keys for the unary runs come from the build under test's database.

use super::*;
use crate::load::LoadStats;

/// The verdict of a figure worse by more than noise, as the table prints it.
const WORSE: &str = "**worse**";

/// What the report calls the build under test.
pub const THIS_BUILD: &str = "this build";

/// Full ListBundles calls per build and round (each a tenth of a second or so, and as noisy:
/// more samples steady the median).
const LISTS_PER_ROUND: usize = 10;

/// `opreg upgrade` samples (each the median of 5 runs) per build and round: a v1 run takes 10 to
/// 25 ms and varies by a third, so many samples.
const UPGRADES_PER_ROUND: usize = 10;

/// Server starts per build and round.
const STARTS_PER_ROUND: usize = 8;

/// Ingests per build and round (one to two seconds each, varying by a tenth from one to the next).
const INGESTS_PER_ROUND: usize = 3;

/// Runs of each unary load point per build and round, each [`UNARY_SECONDS`] long (after the
/// warm-up; shorter when the plan's duration is). On two cores, 64 callers and the server share the CPUs, and a run's calls/s
/// varies from one run to the next by up to half (a second run is not steadier than a first):
/// many short runs give a steadier median than a few long ones.
const UNARY_PER_ROUND: usize = 16;
const UNARY_SECONDS: f64 = 1.0;

/// The builds' order (index 0 the baseline) for the `n`th pair of runs: every step alternates
/// the builds, and which goes first flips each time, since the first of a pair meets the machine
/// as the previous step left it (page cache, frequency).
pub fn order(n: usize) -> [usize; 2] {
    if n.is_multiple_of(2) {
        [0, 1]
    } else {
        [1, 0]
    }
}

/// Samples of one build.
#[derive(Default)]
struct Side {
    ingest: Vec<ChildStats>,
    start_ms: Vec<f64>,
    idle_kb: Vec<f64>,
    list_s: Vec<f64>,
    unary: Vec<(Rpc, usize, Vec<LoadStats>)>,
    upgrade_ms: [Vec<f64>; 2],
    /// `opreg image build` of the catalog into an OCI layout.
    image_build: Vec<ChildStats>,
    /// `opreg mirror` of the catalog image between two registries on loopback.
    mirror: Vec<ChildStats>,
}

pub struct Compared {
    baseline_label: String,
    /// What the report calls the build compared with the baseline.
    label: String,
    sides: [Side; 2],
    /// How long each unary run measured.
    unary_dur: Duration,
    /// Rounds of both builds' servers side by side.
    rounds: usize,
}

/// What [`measure`] compares, where, and how long.
pub struct Plan<'a> {
    pub baseline: &'a Path,
    pub label: &'a str,
    /// The build compared with the baseline: this build, or a commit between the two.
    pub bin: &'a Path,
    /// What the report calls `bin`: "this build", or its commit.
    pub bin_label: &'a str,
    pub catalog: &'a Path,
    pub work: &'a Path,
    pub warmup: Duration,
    /// The longest a unary run measures (at most [`UNARY_SECONDS`] in this section).
    pub dur: Duration,
    pub rounds: usize,
}

/// Measures the baseline (index 0) and this build (index 1) on the catalog, alternating every
/// step.
pub fn measure(rt: &tokio::runtime::Runtime, p: &Plan) -> Compared {
    eprintln!("harness: == {} against {} ==", p.bin_label, p.label);
    let (catalog, work, warmup, rounds) = (p.catalog, p.work, p.warmup, p.rounds);
    let unary_dur = p.dur.min(Duration::from_secs_f64(UNARY_SECONDS));
    let bins = [p.baseline, p.bin];
    let mut sides = [Side::default(), Side::default()];
    let dbs = [work.join("baseline-0.db"), work.join("baseline-1.db")];
    let errf = work.join("baseline.stderr");
    let log = work.join("baseline-serve.log");
    for n in 0..rounds * INGESTS_PER_ROUND {
        for i in order(n) {
            let b = bins[i];
            let _ = std::fs::remove_file(&dbs[i]);
            let st = procs::run_child(
                Command::new(b)
                    .arg("ingest")
                    .arg(catalog)
                    .arg("-o")
                    .arg(&dbs[i])
                    .arg("-q"),
                &errf,
            )
            .unwrap_or_else(|e| panic!("ingest with {}: {e}", b.display()));
            sides[i].ingest.push(st);
        }
    }
    let keys = Arc::new(read_keys(&dbs[1]));
    // Start-up and idle RSS (0.5 s after SERVING), a fresh server each time: about ten
    // milliseconds, varying by a fifth, so many times.
    for n in 0..rounds * STARTS_PER_ROUND {
        for i in order(n) {
            let mut s = Server::spawn(bins[i], &dbs[i], None, &log);
            let t = rt
                .block_on(load::wait_serving(&mut s, Duration::from_secs(60)))
                .unwrap_or_else(|e| panic!("{e}"));
            std::thread::sleep(Duration::from_millis(500));
            sides[i].start_ms.push(t.as_secs_f64() * 1e3);
            sides[i].idle_kb.push(s.rss_kb() as f64);
        }
    }
    // ListBundles and the unary runs: both builds' servers up at once, each load point measured
    // on one build and then the other (the order flipped every round), several times per round,
    // so that drift in the machine's speed falls on both builds alike.
    for round in 0..rounds {
        let servers: Vec<Server> = (0..2)
            .map(|i| {
                let log = work.join(format!("baseline-serve-{i}.log"));
                let mut s = Server::spawn(bins[i], &dbs[i], None, &log);
                rt.block_on(load::wait_serving(&mut s, Duration::from_secs(60)))
                    .unwrap_or_else(|e| panic!("{e}"));
                s.wait_log("integrity check passed", Duration::from_secs(120));
                s
            })
            .collect();
        let pair = order(round);
        for _ in 0..LISTS_PER_ROUND {
            for i in pair {
                sides[i]
                    .list_s
                    .push(rt.block_on(load::list_bundles(&servers[i])).secs);
            }
        }
        for rpc in [Rpc::GetPackage, Rpc::GetBundleThatReplaces] {
            for callers in [1, 64] {
                for _ in 0..UNARY_PER_ROUND {
                    for i in pair {
                        let st = rt.block_on(load::unary(
                            &servers[i],
                            rpc,
                            callers,
                            keys.clone(),
                            warmup,
                            unary_dur,
                        ));
                        let u = &mut sides[i].unary;
                        match u.iter_mut().find(|r| r.0 == rpc && r.1 == callers) {
                            Some(r) => r.2.push(st),
                            None => u.push((rpc, callers, vec![st])),
                        }
                    }
                }
            }
        }
    }
    for round in 0..rounds * UPGRADES_PER_ROUND {
        for i in order(round) {
            if let Some(u) = measure_upgrade(bins[i], &dbs[i], &errf, 5) {
                sides[i].upgrade_ms[0].push(u.classic_ms);
                sides[i].upgrade_ms[1].push(u.v1_ms);
            }
        }
    }
    for db in &dbs {
        let _ = std::fs::remove_file(db);
    }
    match crate::baseline_images::measure(bins, catalog, work, rounds) {
        Ok(images) => {
            let [b0, b1] = images.build;
            let [m0, m1] = images.mirror;
            (sides[0].image_build, sides[1].image_build) = (b0, b1);
            (sides[0].mirror, sides[1].mirror) = (m0, m1);
        }
        Err(e) => eprintln!("harness: image build and mirror not compared: {e}"),
    }
    Compared {
        baseline_label: p.label.to_string(),
        label: p.bin_label.to_string(),
        sides,
        unary_dur,
        rounds,
    }
}

/// How a figure compares: lower is better unless `higher_better`.
struct Figure {
    name: String,
    unit: &'static str,
    higher_better: bool,
    samples: [Vec<f64>; 2],
}

impl Figure {
    fn new(name: impl Into<String>, unit: &'static str, higher_better: bool) -> Figure {
        Figure {
            name: name.into(),
            unit,
            higher_better,
            samples: [Vec::new(), Vec::new()],
        }
    }

    /// The verdict: worse (better) by more than noise when this build's median is more than
    /// 5 % worse (better) than the baseline's and every sample of this build is worse (better)
    /// than every sample of the baseline: the two sets of samples do not overlap.
    fn verdict(&self) -> &'static str {
        let [a, b] = &self.samples;
        if a.is_empty() || b.is_empty() {
            return "not measured";
        }
        let (ma, mb) = (median(a), median(b));
        let worse_by = if self.higher_better { ma / mb } else { mb / ma };
        let (amin, amax) = min_max(a);
        let (bmin, bmax) = min_max(b);
        // Every sample of this build worse (or better) than every sample of the baseline.
        let (all_worse, all_better) = if self.higher_better {
            (bmax < amin, bmin > amax)
        } else {
            (bmin > amax, bmax < amin)
        };
        if worse_by > 1.05 && all_worse {
            WORSE
        } else if worse_by < 1.0 / 1.05 && all_better {
            "better"
        } else {
            "same (within noise)"
        }
    }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

/// Writes the section and returns each figure's name with its verdict.
pub fn section(report: &mut String, catalog: &str, c: &Compared) -> Vec<(String, &'static str)> {
    let mut figs: Vec<Figure> = Vec::new();
    let mut push = |f: Figure, pick: &dyn Fn(&Side) -> Vec<f64>| {
        let mut f = f;
        f.samples = [pick(&c.sides[0]), pick(&c.sides[1])];
        figs.push(f);
    };
    push(Figure::new("ingest wall", "s", false), &|s| {
        s.ingest.iter().map(|x| x.wall.as_secs_f64()).collect()
    });
    push(Figure::new("ingest CPU", "s", false), &|s| {
        s.ingest.iter().map(|x| x.cpu.as_secs_f64()).collect()
    });
    push(Figure::new("ingest peak RSS", "MB", false), &|s| {
        s.ingest
            .iter()
            .map(|x| x.maxrss_kb as f64 / 1024.0)
            .collect()
    });
    push(Figure::new("start → SERVING", "ms", false), &|s| {
        s.start_ms.clone()
    });
    push(
        Figure::new("idle RSS 0.5 s after SERVING", "MB", false),
        &|s| s.idle_kb.iter().map(|k| k / 1024.0).collect(),
    );
    push(Figure::new("full ListBundles", "s", false), &|s| {
        s.list_s.clone()
    });
    for rpc in [Rpc::GetPackage, Rpc::GetBundleThatReplaces] {
        for callers in [1usize, 64] {
            let runs = move |s: &Side| -> Vec<LoadStats> {
                s.unary
                    .iter()
                    .find(|r| r.0 == rpc && r.1 == callers)
                    .map(|r| r.2.clone())
                    .unwrap_or_default()
            };
            push(
                Figure::new(format!("{} ×{callers}: calls/s", rpc.label()), "", true),
                &|s| runs(s).iter().map(|x| x.rps).collect(),
            );
            push(
                Figure::new(
                    format!("{} ×{callers}: server CPU per call", rpc.label()),
                    "µs",
                    false,
                ),
                &|s| runs(s).iter().map(|x| x.server_cpu_us).collect(),
            );
        }
    }
    push(Figure::new("opreg upgrade, classic", "ms", false), &|s| {
        s.upgrade_ms[0].clone()
    });
    push(Figure::new("opreg upgrade, v1", "ms", false), &|s| {
        s.upgrade_ms[1].clone()
    });
    push(
        Figure::new("image build to a layout, wall", "s", false),
        &|s| s.image_build.iter().map(|x| x.wall.as_secs_f64()).collect(),
    );
    push(Figure::new("image build peak RSS", "MB", false), &|s| {
        s.image_build
            .iter()
            .map(|x| x.maxrss_kb as f64 / 1024.0)
            .collect()
    });
    push(
        Figure::new("mirror of the catalog image, wall", "s", false),
        &|s| s.mirror.iter().map(|x| x.wall.as_secs_f64()).collect(),
    );
    push(Figure::new("mirror peak RSS", "MB", false), &|s| {
        s.mirror
            .iter()
            .map(|x| x.maxrss_kb as f64 / 1024.0)
            .collect()
    });

    let (title, this) = if c.label == THIS_BUILD {
        (
            format!("Against the baseline build ({})", c.baseline_label),
            THIS_BUILD.to_string(),
        )
    } else {
        (
            format!(
                "The build {} against the baseline build ({})",
                c.label, c.baseline_label
            ),
            format!("the build {}", c.label),
        )
    };
    let _ = writeln!(
        report,
        "\n## {title}\n\n**{catalog}**. Measured in this run, alternately, {this} and the baseline \
         build (`{}`, built by `scripts/bench.sh` with the same toolchain): ingest \
         ×{n} and start-up and idle RSS ×{s2} (a fresh server each), the order of the builds \
         flipped each time, then {rounds} times both builds' \
         servers side by side: ListBundles ×{LISTS_PER_ROUND} and every unary load point \
         ×{UNARY_PER_ROUND} ({secs} s each), each step on one build and then the other (the order flipped every \
         round); `opreg upgrade` as in the table above, ×{upgrades}, the order flipped each time; `opreg image build` of the \
         catalog's directory into an OCI layout (onto a one-layer base), ×{builds}, and `opreg \
         mirror` of the catalog image (its additionalImages) from one `docker-registry` on \
         loopback to a new repository of another, ×{mirrors}, the order of the builds flipped \
         every round. A figure is worse by more than noise when the median of {this} is more \
         than 5 % worse than the baseline's and the two builds' samples do not overlap.\n",
        c.baseline_label,
        n = c.sides[1].ingest.len(),
        rounds = c.rounds,
        s2 = c.sides[1].start_ms.len(),
        builds = c.sides[1].image_build.len(),
        mirrors = c.sides[1].mirror.len(),
        secs = c.unary_dur.as_secs_f64(),
        upgrades = c.sides[1].upgrade_ms[0].len(),
    );
    let _ = writeln!(
        report,
        "| figure | baseline median (min–max) | {} median (min–max) | {} ÷ baseline | verdict |",
        c.label, c.label
    );
    let _ = writeln!(report, "|---|---|---|---|---|");
    for f in &figs {
        let cell = |v: &Vec<f64>| {
            if v.is_empty() {
                return "–".to_string();
            }
            let (lo, hi) = min_max(v);
            format!("{} ({}–{}) {}", fmt3(median(v)), fmt3(lo), fmt3(hi), f.unit)
        };
        let ratio = if f.samples[0].is_empty() || f.samples[1].is_empty() {
            "–".to_string()
        } else {
            format!("{:.2}", median(&f.samples[1]) / median(&f.samples[0]))
        };
        let _ = writeln!(
            report,
            "| {} | {} | {} | {ratio} | {} |",
            f.name,
            cell(&f.samples[0]),
            cell(&f.samples[1]),
            f.verdict()
        );
    }
    figs.iter().map(|f| (f.name.clone(), f.verdict())).collect()
}

/// The section of `plan` (this build against the baseline), then, with `step` (an
/// intermediate build and its label), that build's section and [`attribution`].
pub fn sections(
    report: &mut String,
    rt: &tokio::runtime::Runtime,
    catalog: &str,
    plan: &Plan,
    step: Option<(&Path, &str)>,
) {
    let this = section(report, catalog, &measure(rt, plan));
    if let Some((bin, bin_label)) = step {
        let plan = Plan {
            bin,
            bin_label,
            ..*plan
        };
        let step = section(report, catalog, &measure(rt, &plan));
        attribution(report, &this, &step, bin_label);
    }
}

/// After both sections: which figures this build has worse than the baseline while the
/// intermediate build (`step`) has them within noise or better, i.e. figures that moved after
/// that build, and which are worse in both.
pub fn attribution(
    report: &mut String,
    this: &[(String, &'static str)],
    step: &[(String, &'static str)],
    step_label: &str,
) {
    let worse = |v: &str| v == WORSE;
    let (mut later, mut both) = (Vec::new(), Vec::new());
    for (name, _) in this.iter().filter(|(_, v)| worse(v)) {
        match step.iter().find(|(n, _)| n == name) {
            Some((_, v)) if worse(v) => both.push(name.as_str()),
            Some(_) => later.push(name.as_str()),
            None => {}
        }
    }
    let list = |v: &[&str]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let _ = writeln!(
        report,
        "\n**Where the differences come from.** Worse than the baseline in this build but within \
         noise or better in the build {step_label}, so changed after that commit: {}. Worse in \
         both builds: {}.",
        list(&later),
        list(&both)
    );
}

/// Three significant digits, at most.
fn fmt3(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The `baseline` subcommand: only this section, on CATALOG, printed as Markdown.
pub fn alone(catalog: &Path, baseline: &Path, label: &str, rounds: usize, work: &Path) {
    let _ = std::fs::create_dir_all(work);
    let rt = load::client_runtime().expect("client runtime");
    let catalog = corpus::repaired_copy(catalog, &work.join("corpus")).expect("copy");
    let c = measure(
        &rt,
        &Plan {
            baseline,
            label,
            bin: &procs::opreg_bin(),
            bin_label: THIS_BUILD,
            catalog: &catalog,
            work,
            warmup: Duration::from_millis(500),
            dur: Duration::from_secs(3),
            rounds,
        },
    );
    let mut report = String::new();
    let name = catalog.file_name().unwrap_or_default().to_string_lossy();
    let _ = section(&mut report, &name, &c);
    print!("{report}");
}
