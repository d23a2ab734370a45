//! Growth (issue 17): synthetic catalogs up to 64× (about 800 MB of FBC), measured the same way
//! at every scale: ingest wall time and peak RSS, database size, idle RSS of `opreg serve` and
//! the time of a full ListBundles. Linear growth from the next-to-largest scale to the largest
//! is checked against the growth of the input, and the figures are drawn as an SVG by the
//! harness itself.

use crate::procs::{run_child, Server};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub struct Point {
    pub scale: f64,
    pub source_mb: f64,
    pub bundles: u64,
    pub ingest_s: f64,
    pub ingest_rss_mb: f64,
    pub db_mb: f64,
    pub idle_rss_mb: f64,
    pub list_s: f64,
    pub list_rss_mb: f64,
}

fn mb(p: &Path) -> f64 {
    std::fs::metadata(p).map_or(0.0, |m| m.len() as f64 / 1e6)
}

/// Ingest runs per scale: the time is their median, the peak RSS their highest.
const INGEST_RUNS: usize = 3;
/// Server starts per scale: idle RSS is their median.
const IDLE_RUNS: usize = 3;
/// Full ListBundles streams per scale: the time is their median. One stream's time moves a
/// lot from one stream to the next (16×: 0.19–0.45 s, eight streams each from two servers of
/// one database, alternately, 2026-11-26), so the median of a few moved by about the linearity
/// limit (16× → 64× at 0.75–1.13 in the earlier full runs); with 31, 1.01 and 1.00 in the
/// two full runs and 1.00 by hand.
const LIST_RUNS: usize = 31;

/// One scale's source and database, in the work directory while the scales are measured.
struct Scale {
    scale: f64,
    src: PathBuf,
    /// Generated here (not by the main run), so removed at the end.
    generated: bool,
    db: PathBuf,
}

/// Measures every scale, smallest first.
///
/// This machine's speed drifts by more than the linearity limit over a few seconds (one full
/// ListBundles of the 16× catalog took 0.30–0.52 s in back-to-back runs of the same binary), and
/// linearity is a ratio between scales. So the timed runs of all scales are interleaved rather
/// than done scale after scale: each ingest round ingests every scale once, and each ListBundles
/// round streams from every scale's server once (smallest first, then largest first), so a slow
/// stretch of the machine falls on every scale alike.
pub fn measure(bin: &Path, work: &Path, seed: u64, scales: &[f64]) -> Result<Vec<Point>, String> {
    let mut all = Vec::new();
    for &scale in scales {
        let src = work.join(format!("synth-{scale}x-seed{seed}.fbc.json"));
        let generated = !src.is_file();
        if generated {
            let f = std::fs::File::create(&src).map_err(|e| e.to_string())?;
            let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
            crate::synth::write_catalog(&mut w, seed, crate::synth::packages_at(scale))
                .map_err(|e| e.to_string())?;
            std::io::Write::flush(&mut w).map_err(|e| e.to_string())?;
        }
        let db = work.join(format!("growth-{scale}x.db"));
        all.push(Scale {
            scale,
            src,
            generated,
            db,
        });
    }
    let points = measure_scales(bin, work, &all);
    for s in &all {
        let _ = std::fs::remove_file(&s.db);
        if s.generated {
            let _ = std::fs::remove_file(&s.src);
        }
    }
    points
}

fn measure_scales(bin: &Path, work: &Path, all: &[Scale]) -> Result<Vec<Point>, String> {
    let (mut walls, mut peak_kb) = (vec![Vec::new(); all.len()], vec![0; all.len()]);
    for _ in 0..INGEST_RUNS {
        for (i, s) in all.iter().enumerate() {
            let _ = std::fs::remove_file(&s.db);
            let ingest = run_child(
                Command::new(bin)
                    .arg("ingest")
                    .arg(&s.src)
                    .arg("-o")
                    .arg(&s.db)
                    .arg("-q"),
                &work.join("growth.stderr"),
            )?;
            walls[i].push(ingest.wall.as_secs_f64());
            peak_kb[i] = peak_kb[i].max(ingest.maxrss_kb);
        }
    }
    let rt = crate::load::client_runtime().map_err(|e| e.to_string())?;
    let start = |s: &Scale| -> Result<Server, String> {
        let log = work.join(format!("growth-serve-{}x.log", s.scale));
        let mut srv = Server::spawn(bin, &s.db, None, &log);
        rt.block_on(crate::load::wait_serving(
            &mut srv,
            Duration::from_secs(120),
        ))?;
        srv.wait_log("integrity check passed", Duration::from_secs(300));
        std::thread::sleep(Duration::from_millis(500));
        Ok(srv)
    };
    // Idle RSS moves by up to a megabyte between starts of one binary: the median of three.
    let mut idles = vec![Vec::new(); all.len()];
    for _ in 0..IDLE_RUNS {
        for (i, s) in all.iter().enumerate() {
            idles[i].push(start(s)?.rss_kb() as f64);
        }
    }
    // One server per scale, all up at once (idle but for the stream being timed).
    let servers = all.iter().map(start).collect::<Result<Vec<_>, _>>()?;
    let mut lists: Vec<Vec<crate::load::ListStats>> = all.iter().map(|_| Vec::new()).collect();
    for round in 0..LIST_RUNS {
        for j in 0..all.len() {
            let i = if round % 2 == 0 { j } else { all.len() - 1 - j };
            lists[i].push(rt.block_on(crate::load::list_bundles(&servers[i])));
        }
    }
    drop(servers);
    let mut points = Vec::new();
    let each = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for (i, s) in all.iter().enumerate() {
        let secs: Vec<f64> = lists[i].iter().map(|l| l.secs).collect();
        let p = Point {
            scale: s.scale,
            source_mb: mb(&s.src),
            bundles: lists[i].last().map_or(0, |l| l.msgs),
            ingest_s: crate::measure::median(&walls[i]),
            ingest_rss_mb: peak_kb[i] as f64 / 1024.0,
            db_mb: mb(&s.db),
            idle_rss_mb: crate::measure::median(&idles[i]) / 1024.0,
            list_s: crate::measure::median(&secs),
            list_rss_mb: lists[i].iter().map(|l| l.rss_peak_kb).max().unwrap_or(0) as f64 / 1024.0,
        };
        eprintln!(
            "harness: growth {}×: {:.0} MB, ingest {:.1} s ({}), DB {:.0} MB, ListBundles {:.2} s ({})",
            p.scale,
            p.source_mb,
            p.ingest_s,
            each(&walls[i]),
            p.db_mb,
            p.list_s,
            each(&secs)
        );
        points.push(p);
    }
    Ok(points)
}

/// Where the plot goes: `docs/bench-growth.svg` for the full run (linked from BENCHMARKS.md),
/// the work directory for a smoke run.
pub fn svg_path(in_docs: bool, work: &Path) -> PathBuf {
    if in_docs {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/bench-growth.svg")
    } else {
        work.join("bench-growth.svg")
    }
}

/// A plotted figure: label, colour, value.
type Series = (&'static str, &'static str, fn(&Point) -> f64);

/// Each metric divided by its value at the largest-but-one scale, against the input size
/// divided likewise: on the dashed diagonal means proportional growth.
pub fn svg(points: &[Point]) -> String {
    let (w, h, m) = (640.0, 420.0, 60.0);
    let base = &points[points.len().saturating_sub(2)];
    let xmax = points
        .iter()
        .map(|p| p.source_mb / base.source_mb)
        .fold(1.0, f64::max);
    let series: [Series; 4] = [
        ("ingest time", "#1f77b4", |p| p.ingest_s),
        ("ListBundles time", "#d62728", |p| p.list_s),
        ("database size", "#2ca02c", |p| p.db_mb),
        ("peak ingest RSS", "#9467bd", |p| p.ingest_rss_mb),
    ];
    let ymax = series
        .iter()
        .flat_map(|(_, _, f)| points.iter().map(move |p| f(p) / f(base).max(1e-9)))
        .fold(xmax, f64::max)
        * 1.05;
    let x = |v: f64| m + v / xmax * (w - 2.0 * m);
    let y = |v: f64| h - m - v / ymax * (h - 2.0 * m);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14">Growth with catalog size (relative to the {}× catalog)</text>"#,
        w / 2.0,
        base.scale
    );
    let _ = writeln!(
        s,
        r#"<line x1="{m}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{m}" y1="{}" x2="{m}" y2="{m}" stroke="black"/>"#,
        h - m,
        w - m,
        h - m,
        h - m
    );
    let _ = writeln!(
        s,
        r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="gray" stroke-dasharray="5,4"/>"#,
        x(0.0),
        y(0.0),
        x(xmax.min(ymax)),
        y(xmax.min(ymax))
    );
    for p in points {
        let v = p.source_mb / base.source_mb;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}×</text>"#,
            x(v),
            h - m + 16.0,
            p.scale
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">input size (FBC MB) ÷ {:.0} MB</text>"#,
        w / 2.0,
        h - m + 36.0,
        base.source_mb
    );
    for k in 0..=4 {
        let v = ymax * k as f64 / 4.0;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{v:.1}</text>"#,
            m - 6.0,
            y(v) + 4.0
        );
    }
    for (i, (label, colour, f)) in series.iter().enumerate() {
        let pts: Vec<String> = points
            .iter()
            .map(|p| {
                format!(
                    "{:.1},{:.1}",
                    x(p.source_mb / base.source_mb),
                    y(f(p) / f(base).max(1e-9))
                )
            })
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            pts.join(" ")
        );
        for pt in &pts {
            let (px, py) = pt.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(s, r#"<circle cx="{px}" cy="{py}" r="3" fill="{colour}"/>"#);
        }
        let ly = m + 10.0 + 18.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{}">{label}</text>"#,
            m + 10.0,
            m + 34.0,
            m + 40.0,
            ly + 4.0
        );
    }
    let ly = m + 10.0 + 18.0 * series.len() as f64;
    let _ = writeln!(
        s,
        r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="gray" stroke-dasharray="5,4"/><text x="{}" y="{}">proportional to input</text>"#,
        m + 10.0,
        m + 34.0,
        m + 40.0,
        ly + 4.0
    );
    s.push_str("</svg>\n");
    s
}

/// The report section: the table, the targets from the largest-but-one scale to the largest,
/// and a link to the plot.
pub fn section(w: &mut String, points: &Result<Vec<Point>, String>, svg_link: Option<&str>) {
    let _ = writeln!(w, "\n## Growth\n\nSynthetic catalogs (same seed), each measured the same way: `opreg ingest` {INGEST_RUNS} times (median wall time, highest peak RSS), the database's size, `opreg serve` idle RSS 0.5 s after its integrity check passed (median of {IDLE_RUNS} starts), and a full ListBundles {LIST_RUNS} times from one server per scale (median time; every message decoded, server RSS sampled while streaming, the highest). The timed runs of all scales are interleaved (each round ingests, or streams from, every scale once), so that the machine's drift over a few seconds falls on every scale alike.\n");
    let pts = match points {
        Err(e) => {
            let _ = writeln!(w, "Not measured: {e}");
            return;
        }
        Ok(p) if p.len() < 2 => {
            let _ = writeln!(w, "Not measured: fewer than two scales.");
            return;
        }
        Ok(p) => p,
    };
    let _ = writeln!(w, "| scale | FBC MB | bundles | ingest (s) | peak ingest RSS (MB) | DB MB | serve idle RSS (MB) | ListBundles (s) | RSS during ListBundles (MB) |\n|---|---|---|---|---|---|---|---|---|");
    for p in pts {
        let _ = writeln!(
            w,
            "| {}× | {:.1} | {} | {:.2} | {:.0} | {:.1} | {:.1} | {:.2} | {:.1} |",
            p.scale,
            p.source_mb,
            p.bundles,
            p.ingest_s,
            p.ingest_rss_mb,
            p.db_mb,
            p.idle_rss_mb,
            p.list_s,
            p.list_rss_mb
        );
    }
    let (a, b) = (&pts[pts.len() - 2], &pts[pts.len() - 1]);
    let input = b.source_mb / a.source_mb;
    let met = |ok: bool| if ok { "MET" } else { "NOT MET" };
    let _ = writeln!(w, "\n{}× → {}×: the input grew {input:.2}×. Linear means each figure grew by that factor within 15 % (its growth ÷ the input's in 0.85–1.15).\n", a.scale, b.scale);
    let _ = writeln!(
        w,
        "| target ({}× → {}×) | limit | measured | met |\n|---|---|---|---|",
        a.scale, b.scale
    );
    for (what, fa, fb) in [
        ("ingest time grows linearly", a.ingest_s, b.ingest_s),
        ("ListBundles time grows linearly", a.list_s, b.list_s),
        ("database size grows linearly", a.db_mb, b.db_mb),
    ] {
        let r = fb / fa.max(1e-9) / input;
        let _ = writeln!(
            w,
            "| {what} | growth ÷ input 0.85–1.15 | {:.2}× ÷ {input:.2}× = {r:.2} | {} |",
            fb / fa.max(1e-9),
            met((0.85..=1.15).contains(&r))
        );
    }
    let _ = writeln!(
        w,
        "| peak ingest RSS below the input ({}×) | < {:.0} MB | {:.0} MB | {} |",
        b.scale,
        b.source_mb / 1.048_576,
        b.ingest_rss_mb,
        met(b.ingest_rss_mb * 1.048_576 < b.source_mb)
    );
    let r = b.idle_rss_mb / a.idle_rss_mb.max(1e-9);
    let _ = writeln!(
        w,
        "| serve idle RSS flat | ≤ 1.15 × {:.1} MB | {:.1} MB ({r:.2}×) | {} |",
        a.idle_rss_mb,
        b.idle_rss_mb,
        met(r <= 1.15)
    );
    if let Some(link) = svg_link {
        let _ = writeln!(w, "\n![Growth plot: each figure relative to the {}× catalog against the input size]({link})", a.scale);
    }
}
