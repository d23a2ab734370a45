//! `opreg serve` (and `opm serve` when installed as `opm`): serve a catalog over gRPC.
//!
//! SOURCE may be a built opreg database (opened read-only, served directly) or anything
//! `opreg ingest` accepts (ingested at start-up). With no SOURCE the embedded demo catalog is
//! served. The cache flags mean what they mean to `opm serve`: with `--cache-dir` the built
//! database is kept there and reused while the source digest matches; `--cache-only` builds it
//! and exits; `--cache-enforce-integrity` (on by default when `--cache-dir` is given without
//! `--cache-only`) refuses to start unless the cache matches the source. `--fallback-demo`
//! serves the demo when SOURCE does not exist: the container image's default command is
//! `serve /configs --fallback-demo ...`, so the bare image serves the demo and a catalog image
//! built on it serves its `/configs`.

use crate::source::SourceKind;
use crate::store::Store;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

const CACHE_DB: &str = "opreg-catalog.db";

/// Serve a catalog over the operator-registry gRPC API (a drop-in for `opm serve`).
///
/// Services: api.Registry, api.ExperimentalRegistry, opreg.v1.Upgrades, grpc.health.v1.Health
/// and server reflection (v1 and v1alpha). The server listens on [::]:PORT (IPv4 and IPv6),
/// reports NOT_SERVING until the catalog is loaded, and stops gracefully on SIGTERM/SIGINT.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// A built opreg database, or any source `opreg ingest` accepts. Omit it to serve the
    /// embedded demo catalog.
    #[arg(value_name = "SOURCE")]
    pub source: Option<PathBuf>,
    /// Port to listen on.
    #[arg(short, long, default_value_t = 50051)]
    pub port: u16,
    /// Keep the built database in this directory and reuse it while the source is unchanged.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Build (or check) the cache, then exit without serving.
    #[arg(long)]
    pub cache_only: bool,
    /// Refuse to start unless the cache matches the source [default: on when --cache-dir is
    /// given without --cache-only].
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub cache_enforce_integrity: Option<bool>,
    /// File that receives the reason for a fatal start-up error.
    #[arg(
        short = 't',
        long,
        default_value = "/dev/termination-log",
        value_name = "PATH"
    )]
    pub termination_log: PathBuf,
    /// Debug logging.
    #[arg(long)]
    pub debug: bool,
    /// If SOURCE does not exist, serve the embedded demo catalog instead of failing (with
    /// --cache-dir, the demo's cache is looked for and kept there). The container image's
    /// default command uses it, so the bare image serves the demo.
    #[arg(long)]
    pub fallback_demo: bool,
    /// Seconds in-flight calls may run after SIGTERM/SIGINT before the server exits.
    #[arg(long, default_value = "10", value_name = "SECONDS", value_parser = parse_seconds)]
    pub grace_period: Duration,
    /// Serve a catalog with no packages (refused by default, as a likely mistake).
    #[arg(long)]
    pub allow_empty: bool,
    /// Accepted for compatibility with `opm serve` and ignored, with a warning: opreg has no
    /// profiling endpoint.
    #[arg(long, value_name = "ADDR")]
    pub pprof_addr: Option<String>,
    /// Worker threads answering requests [default: the number of cores available to the
    /// process]. A replica is read-only: scale out with more replicas rather than threads.
    #[arg(long, env = "OPREG_THREADS", value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub image: crate::image::ImageArgs,
}

pub fn run(a: Args) -> i32 {
    disable_transparent_huge_pages();
    super::return_freed_memory_at_once();
    let workers = a.threads.map(usize::from).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        // SQLite queries run on the blocking pool, one pooled connection each. They are
        // CPU-bound (the file is in the page cache), so more threads than about twice the
        // workers only add connections, cold page caches and memory: with tokio's default of
        // 512, 64 concurrent callers made 64 threads and connections and 10× the RSS.
        .max_blocking_threads((2 * workers).clamp(2, 32))
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return fatal(
                &a.termination_log,
                &anyhow::anyhow!("cannot start the runtime: {e}"),
            )
        }
    };
    match rt.block_on(run_async(a.clone())) {
        Ok(()) => super::EXIT_OK,
        Err(e) => fatal(&a.termination_log, &e),
    }
}

/// The allocator asks for transparent huge pages for its arenas (madvise), so every touched
/// 2 MB region counts as resident: a serving process held about 10 MB more at idle and several
/// times its working set after a burst. The server's working set is small; opt this process
/// out (Linux only; a no-op elsewhere or when refused).
fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_THP_DISABLE) only sets a flag on this process; no memory is passed.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Prints a one-line reason, writes it to the termination log (a warning if that fails), exits 1.
/// An invalid catalog prints every diagnostic first, as `validate` does.
fn fatal(termination_log: &Path, e: &anyhow::Error) -> i32 {
    let log = match e.downcast_ref::<crate::diag::Diagnostics>() {
        // One problem is its own one-line reason.
        Some(crate::diag::Diagnostics(one)) if one.len() == 1 => {
            super::output::diagnostic(&one[0]);
            one[0].to_string()
        }
        Some(d) => {
            d.0.iter().for_each(super::output::diagnostic);
            let line = format!("{} error(s): the catalog is invalid", d.0.len());
            super::output::error(&line);
            // The termination log has no other lines to point to: it gets them all, on one line.
            let all = d.0.iter().map(|x| x.to_string()).collect::<Vec<_>>();
            let log = format!("{line}: {}", all.join("; "));
            crate::text::elide(&log, 4000, 200).into_owned()
        }
        None => {
            let line = format!("{e:#}").replace('\n', "; ");
            super::output::error(&line);
            line
        }
    };
    if let Err(w) = std::fs::write(termination_log, format!("{log}\n")) {
        tracing::debug!(path = %termination_log.display(), error = %w, "could not write the termination log");
    }
    super::EXIT_FAILURE
}

async fn run_async(mut a: Args) -> Result<()> {
    if let Some(addr) = &a.pprof_addr {
        tracing::warn!(pprof_addr = %addr, "--pprof-addr is ignored: opreg has no profiling endpoint");
    }
    if a.source.is_none() {
        tracing::warn!("no SOURCE given: serving the embedded demo catalog");
    }
    a.source = effective_source(a.source.take(), a.fallback_demo);
    let enforce = a
        .cache_enforce_integrity
        .unwrap_or(a.cache_dir.is_some() && !a.cache_only);
    if enforce && a.cache_dir.is_none() {
        bail!("--cache-dir must be specified with --cache-enforce-integrity");
    }
    if a.cache_only {
        let dir = a.cache_dir.clone();
        let src = a.source.clone();
        let image = a.image.clone();
        tokio::task::spawn_blocking(move || {
            prepare(
                src.as_deref(),
                dir.as_deref(),
                enforce,
                &image,
                a.allow_empty,
            )
        })
        .await??;
        tracing::info!("cache is ready");
        return Ok(());
    }
    let listener = crate::server::bind(a.port).await?;
    let opts = crate::server::Options {
        port: a.port,
        grace: a.grace_period,
    };
    let (src, dir, image) = (a.source.clone(), a.cache_dir.clone(), a.image.clone());
    let allow_empty = a.allow_empty;
    // The temporary directory holding the database (no --cache-dir) lives as long as the
    // server: it is removed when serve returns, after a clean shutdown or a failure.
    let temp_dir = std::sync::Arc::new(std::sync::Mutex::new(None));
    let keep = temp_dir.clone();
    let served = crate::server::serve(listener, opts, move || {
        let (store, tmp) = prepare(src.as_deref(), dir.as_deref(), enforce, &image, allow_empty)?;
        if let Ok(mut k) = keep.lock() {
            *k = tmp;
        }
        Ok(store)
    })
    .await;
    drop(temp_dir);
    served
}

/// A number of seconds, at least 0 and at most a year (so `inf`, `nan` and `-1` are usage
/// errors, not a panic).
fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !(0.0..=365.0 * 86400.0).contains(&secs) {
        return Err(format!("{s:?} must be between 0 and 31536000 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// SOURCE, or `None` (the demo) when `fallback_demo` is set and SOURCE does not exist.
fn effective_source(source: Option<PathBuf>, fallback_demo: bool) -> Option<PathBuf> {
    match source {
        Some(src) if fallback_demo && crate::image::is_local(&src) => {
            match std::fs::symlink_metadata(&src) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    tracing::info!(
                        source = %src.display(),
                        "SOURCE does not exist; serving the embedded demo catalog (--fallback-demo)"
                    );
                    None
                }
                _ => Some(src),
            }
        }
        other => other,
    }
}

/// Turns a SOURCE (or the demo) into an open store, building or reusing a cache as asked.
/// Returns the temp dir holding the database when no cache dir was given.
fn prepare(
    source: Option<&Path>,
    cache_dir: Option<&Path>,
    enforce: bool,
    image: &crate::image::ImageArgs,
    allow_empty: bool,
) -> Result<(Store, Option<TempDirGuard>)> {
    // An image SOURCE is pulled here, while health still says NOT_SERVING.
    let resolved = match source {
        Some(s) => crate::image::resolve(&[s.to_path_buf()], image, false)?,
        None => crate::image::Resolved::default(),
    };
    let source = resolved.paths.first().map(PathBuf::as_path);
    if let Some(src) = source {
        if crate::source::detect(src).with_context(|| format!("cannot read {}", src.display()))?
            == SourceKind::OpregDb
        {
            let store = Store::open_unverified(src)?;
            // A database inside an image is served from the unpacked copy, kept until exit.
            std::mem::forget(resolved);
            return Ok((store, None));
        }
    }
    let (dir, guard) = match cache_dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .with_context(|| format!("cannot create cache dir {}", d.display()))?;
            (d.to_path_buf(), None)
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("opreg-serve-cache-")
                .tempdir()
                .context(
                    "cannot create a temporary cache directory; give a writable --cache-dir",
                )?;
            (t.path().to_path_buf(), Some(TempDirGuard(t)))
        }
    };
    let db = dir.join(CACHE_DB);
    let sources: Vec<PathBuf> = source.map(|s| vec![s.to_path_buf()]).unwrap_or_default();
    let digest = if sources.is_empty() {
        demo_digest()
    } else {
        super::source_digest(&sources).context("cannot read the source")?
    };
    if db.exists() {
        match Store::open_unverified(&db).and_then(|s| Ok((s.info("source_digest")?, s))) {
            Ok((Some(d), s)) if d == digest => {
                tracing::info!(cache = %db.display(), "cache matches the source; reusing it");
                return Ok((s, guard));
            }
            Ok((d, _)) if enforce => bail!(
                "integrity check failed: cache reports digest {:?}, but computed digest is {digest:?}",
                d.unwrap_or_default()
            ),
            Err(e) if enforce => bail!("integrity check failed: {e:#}"),
            _ => tracing::info!("cache is stale; rebuilding"),
        }
    } else if enforce {
        bail!(
            "integrity check failed: no cache at {}; build it with --cache-only",
            db.display()
        );
    }
    let cat = if sources.is_empty() {
        crate::demo::catalog().map_err(|d| anyhow::anyhow!("demo catalog is invalid: {d}"))?
    } else {
        let mut warnings = Vec::new();
        let (cat, mut errors) =
            crate::source::load_sources_with(&sources, &mut warnings, &mut |b, _| {
                resolved.finish_bundle(b)
            });
        let valid = crate::validate::check(cat, &mut errors, &mut warnings);
        for w in warnings {
            tracing::warn!("{w}");
        }
        match valid {
            Ok(cat) if cat.packages.is_empty() && !allow_empty => {
                return Err(crate::diag::Diagnostics(vec![super::load::no_packages()]).into())
            }
            Ok(cat) => cat,
            Err(_) => return Err(crate::diag::Diagnostics(errors).into()),
        }
    };
    let builder = crate::store::Builder::create(&db)?;
    if let Some(images) = resolved.catalog_info() {
        builder.set_info("images", &images)?;
    }
    builder.finish(&cat, &digest, &mut |_, _| {})?;
    make_world_readable(&db);
    Ok((Store::open_unverified(&db)?, guard))
}

/// A cache built at image build time (by USER 1001, or root) is read at run time by another,
/// possibly arbitrary, UID: whatever the umask of the build, open the cache up to 0644 (opm
/// writes its cache with umask 000 for the same reason).
fn make_world_readable(db: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Err(e) = std::fs::set_permissions(db, std::fs::Permissions::from_mode(0o644)) {
            tracing::warn!(path = %db.display(), error = %e, "could not make the cache readable by other users");
        }
    }
}

fn demo_digest() -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(crate::demo::FBC_YAML.as_bytes());
    format!("sha256:{:x}", h.finalize())
}

struct TempDirGuard(#[allow(dead_code)] tempfile::TempDir);

/// `opm` compatibility: `opm serve <dir> [--cache-dir] [--cache-only] [--cache-enforce-integrity] [-p] [-t]`.
pub fn run_opm_compat(args: &[std::ffi::OsString]) -> i32 {
    use std::ffi::OsString;
    #[derive(clap::Parser, Debug)]
    #[command(
        name = "opm",
        about = "opreg's opm-compatible entry point: only `opm serve` is available"
    )]
    struct Opm {
        #[command(subcommand)]
        cmd: OpmCmd,
    }
    #[derive(clap::Subcommand, Debug)]
    enum OpmCmd {
        /// Serve a file-based catalog (opreg implementation).
        Serve {
            #[command(flatten)]
            args: Box<Args>,
            /// More SOURCEs: refused, as opm takes exactly one.
            #[arg(hide = true, value_name = "EXTRA")]
            extra: Vec<PathBuf>,
            #[arg(long, hide = true)]
            pprof_capture_profiles: bool,
        },
        #[command(external_subcommand)]
        Other(Vec<OsString>),
    }
    let mut argv = vec![std::ffi::OsString::from("opm")];
    argv.extend(args.iter().cloned());
    match <Opm as clap::Parser>::try_parse_from(argv) {
        Ok(Opm {
            cmd: OpmCmd::Serve {
                mut args, extra, ..
            },
        }) => {
            // As opm's `serve <source_path>`: exactly one argument, in cobra's words.
            let n = usize::from(args.source.is_some()) + extra.len();
            if n != 1 {
                super::output::error(format_args!("accepts 1 arg(s), received {n}"));
                return super::EXIT_USAGE;
            }
            // opm serves an empty catalog.
            args.allow_empty = true;
            super::init_logging(super::LogFormat::Text, args.debug);
            run(*args)
        }
        Ok(Opm {
            cmd: OpmCmd::Other(rest),
        }) => {
            let name = rest
                .first()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default();
            super::output::error(format_args!("`opm {name}` is not available: this image runs opreg, which implements only `opm serve`"));
            super::EXIT_USAGE
        }
        Err(e) => {
            let _ = e.print();
            if e.use_stderr() {
                super::EXIT_USAGE
            } else {
                super::EXIT_OK
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_demo_only_replaces_a_missing_source() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("configs");
        assert_eq!(effective_source(Some(missing.clone()), true), None);
        assert_eq!(
            effective_source(Some(missing.clone()), false),
            Some(missing)
        );
        let present = dir.path().to_path_buf();
        assert_eq!(effective_source(Some(present.clone()), true), Some(present));
        assert_eq!(effective_source(None, true), None);
    }

    #[cfg(unix)]
    #[test]
    fn cache_is_readable_by_other_users() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (_store, _) =
            prepare(None, Some(dir.path()), false, &Default::default(), false).unwrap();
        let mode = std::fs::metadata(dir.path().join(CACHE_DB))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
    }
}
