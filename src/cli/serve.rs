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

use crate::http::content::Content;
use crate::source::SourceKind;
use crate::store::Store;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const CACHE_DB: &str = "opreg-catalog.db";

// Help text: the doc comment of `Command::Serve` in src/cli/mod.rs.
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
    /// Also serve catalogd's HTTP API (OLM v1 clients: /catalogs/NAME/api/v1/all and
    /// /api/v1/metas), /healthz, /readyz and Prometheus /metrics on this port.
    #[arg(long, value_name = "PORT")]
    pub http_port: Option<u16>,
    /// The catalog's name in the HTTP API's paths (a DNS-1123 label).
    #[arg(long, default_value = "catalog", value_name = "NAME", value_parser = parse_catalog_name)]
    pub catalog_name: String,
    /// Reload when SOURCE (a directory or file) changes; changes are debounced and land
    /// within seconds. SIGHUP reloads at any time, with or without --watch.
    #[arg(long)]
    pub watch: bool,
    /// For an image SOURCE: ask the registry every D (30s, 5m, 1h30m) which digest the tag
    /// names, and reload when it changes (only the manifest is read until then).
    #[arg(long, value_name = "D", value_parser = super::poll::parse_interval)]
    pub poll_interval: Option<Duration>,
    /// Serve TLS on the gRPC port and the HTTP port with this PEM certificate (chain).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Do not log one line per gRPC call and HTTP request.
    #[arg(long)]
    pub no_call_log: bool,
    /// Do not serve catalogd's GraphQL endpoint (POST /catalogs/NAME/api/v1/graphql) on the
    /// HTTP port.
    #[arg(long)]
    pub no_graphql: bool,
    #[command(flatten)]
    pub image: crate::image::ImageArgs,
}

fn parse_catalog_name(s: &str) -> Result<String, String> {
    let errs = crate::validate::dns1123_label_errors(s);
    if errs.is_empty() {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a DNS-1123 label: {}",
            errs.join("; ")
        ))
    }
}

pub fn run(a: Args) -> i32 {
    if a.poll_interval.is_some() {
        if let Err(e) = super::poll::check_source(a.source.as_deref()) {
            super::output::error(e);
            return super::EXIT_USAGE;
        }
    }
    crate::memory::for_serving();
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
        .thread_keep_alive(crate::memory::Trimmer::BLOCKING_KEEP_ALIVE)
        .on_thread_park(crate::memory::on_worker_park)
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
    let res = rt.block_on(run_async(a.clone()));
    // Batched call lines go out before anything else is printed, and before the exit (`opreg
    // serve` and `opm serve` both end here).
    super::log_sink::flush();
    match res {
        Ok(()) => super::EXIT_OK,
        Err(e) => fatal(&a.termination_log, &e),
    }
}

/// Prints a one-line reason, writes it to the termination log (a warning if that fails), exits 1.
/// An invalid catalog prints every diagnostic first, as `validate` does.
fn fatal(termination_log: &Path, e: &anyhow::Error) -> i32 {
    let diagnostics = e
        .downcast_ref::<crate::diag::Diagnostics>()
        .or_else(|| e.downcast_ref::<super::reload::Invalid>().map(|i| &i.0));
    let log = match diagnostics {
        // One problem is its own one-line reason.
        Some(crate::diag::Diagnostics(one)) if one.len() == 1 => {
            super::output::diagnostic(&one[0]);
            one_line(&one[0])
        }
        Some(d) => {
            d.0.iter().for_each(super::output::diagnostic);
            let line = format!("{} error(s): the catalog is invalid", d.0.len());
            super::output::error(&line);
            // The termination log has no other lines to point to: it gets them all, on one line.
            let all = d.0.iter().map(one_line).collect::<Vec<_>>();
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

/// A diagnostic on one line (its `help:` line, if any, joined to it), for the termination log.
fn one_line(d: &crate::diag::Diagnostic) -> String {
    d.to_string()
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
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
        let allow_empty = a.allow_empty;
        tokio::task::spawn_blocking(move || {
            prepare(
                src.as_deref(),
                dir.as_deref(),
                enforce,
                &image,
                None,
                allow_empty,
            )
        })
        .await??;
        tracing::info!("cache is ready");
        return Ok(());
    }
    let tls = a.tls_cert.clone().zip(a.tls_key.clone());
    let listener = crate::server::bind(a.port).await?;
    let http_listener = match a.http_port {
        Some(p) => Some(crate::server::bind(p).await?),
        None => None,
    };
    let metrics = Arc::new(crate::metrics::Metrics::new(!a.no_call_log));
    let state = Arc::new(crate::server::State::default());
    let idle_state = state.clone();
    let runtime = tokio::runtime::Handle::current();
    super::log_sink::batch();
    crate::memory::Trimmer::spawn(metrics.activity.clone(), move || {
        super::log_sink::flush();
        if let Ok(s) = idle_state.store() {
            s.close_idle_connections();
        }
        // Wake the idle workers, so that each parks again and collects its heap.
        for _ in 0..2 * runtime.metrics().num_workers() {
            runtime.spawn(async {});
        }
    });
    let http_state = http_listener.as_ref().map(|_| {
        let s = crate::http::HttpState::new(&a.catalog_name, metrics.clone());
        s.graphql.set_enabled(!a.no_graphql);
        Arc::new(s)
    });
    let addrs = (
        listener.local_addr()?,
        http_listener.as_ref().map(|l| l.local_addr()).transpose()?,
    );
    // The server's working directory (the database when there is no --cache-dir, every
    // reload's database, the JSONL files), made on first use: a server given a --cache-dir on
    // a read-only root file system, with no HTTP listener, never needs it. Removed when serve
    // returns.
    let work = Arc::new(WorkDir::default());
    let (src, dir, image) = (a.source.clone(), a.cache_dir.clone(), a.image.clone());
    let allow_empty = a.allow_empty;
    let with_http = http_state.is_some();
    let source_label = src
        .as_ref()
        .map(|s| s.display().to_string())
        .unwrap_or_else(|| "demo".to_string());
    let work_b = work.clone();
    let build: Arc<super::reload::BuildFn> = Arc::new(move |generation, prev| {
        let jsonl = match with_http {
            true => Some(work_b.path()?.join(format!("catalog-{generation}.jsonl"))),
            false => None,
        };
        let render = jsonl.as_deref().map(|j| (j, prev));
        let (store, content) = if generation == 0 {
            // The start-up build honours --cache-dir; the database lives in `work` otherwise.
            let d = match &dir {
                Some(d) => d.clone(),
                None => work_b.path()?.join("v0"),
            };
            let (store, _, content) = prepare(
                src.as_deref(),
                Some(&d),
                enforce,
                &image,
                render,
                allow_empty,
            )?;
            (store, content)
        } else {
            // A reload builds beside the served version, never over it (and never uses the
            // cache): the directory goes when the last call reading this version ends.
            let d = tempfile::Builder::new()
                .prefix(&format!("v{generation}-"))
                .tempdir_in(work_b.path()?)?;
            let (store, _, content) = prepare(
                src.as_deref(),
                Some(d.path()),
                false,
                &image,
                render,
                allow_empty,
            )?;
            (store.keep_alive(d), content)
        };
        let built = content
            .as_ref()
            .map(|c| c.modified)
            .unwrap_or_else(SystemTime::now);
        let facts = super::reload::facts(&store, &source_label, built)?;
        Ok(super::reload::Version {
            store,
            content,
            facts,
        })
    });
    let reloader = super::reload::Reloader {
        state: state.clone(),
        http: http_state.clone(),
        metrics: metrics.clone(),
        build,
    };
    let opts = crate::server::Options {
        port: a.port,
        grace: a.grace_period,
        state: Some(state.clone()),
        metrics: Some(metrics),
        http: http_listener.zip(http_state),
        tls,
    };
    let watch = if a.watch {
        match &a.source {
            Some(s) if crate::image::is_local(s) => Some(s.clone()),
            _ => bail!("--watch needs a SOURCE directory or file"),
        }
    } else {
        None
    };
    let poll = a.poll_interval.map(|every| super::poll::Poll {
        source: a.source.clone().unwrap_or_default(),
        image: a.image.clone(),
        every,
    });
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
    let reloader = Arc::new(reloader);
    let r = reloader.clone();
    let served = crate::server::serve(listener, opts, move || {
        let store = r.initial()?;
        tracing::info!(grpc = %addrs.0, http = ?addrs.1.map(|a| a.to_string()), "listen addresses");
        let _ = ready_tx.send(());
        Ok(store)
    });
    let reloads = async move {
        // Reloads start once the first version is served.
        if ready_rx.await.is_ok() {
            reloader.run(watch, poll).await;
        }
        std::future::pending::<()>().await
    };
    tokio::select! {
        res = served => { drop(work); res }
        _ = reloads => unreachable!("the reload loop never ends"),
    }
}

/// A private temporary directory, created the first time a path in it is asked for.
#[derive(Default)]
struct WorkDir(std::sync::OnceLock<tempfile::TempDir>);

impl WorkDir {
    fn path(&self) -> anyhow::Result<&Path> {
        if let Some(t) = self.0.get() {
            return Ok(t.path());
        }
        let t = tempfile::Builder::new()
            .prefix("opreg-serve-")
            .tempdir()
            .context("cannot create a temporary directory; give a writable --cache-dir, or a writable TMPDIR")?;
        // Two builds never run at once, so a lost race only drops an empty directory.
        Ok(self.0.get_or_init(|| t).path())
    }
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
    render: Option<(&Path, Option<SystemTime>)>,
    allow_empty: bool,
) -> Result<(Store, Option<TempDirGuard>, Option<Content>)> {
    // With --http-port, the JSONL catalogd serves is written once per built version, from the
    // catalog just validated, or read back from a database that is reused.
    let from_store = |store: Store, guard| -> Result<_> {
        let content = match render {
            Some((path, prev)) => Some(Content::write(&store.load_catalog()?, path, prev)?),
            None => None,
        };
        Ok((store, guard, content))
    };
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
            return from_store(store, None);
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
        crate::demo::digest()
    } else {
        super::source_digest(&sources).context("cannot read the source")?
    };
    if db.exists() {
        match Store::open_unverified(&db).and_then(|s| Ok((s.info("source_digest")?, s))) {
            Ok((Some(d), s)) if d == digest => {
                tracing::info!(cache = %db.display(), "cache matches the source; reusing it");
                return from_store(s, guard);
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
        resolved.locate(&mut errors);
        resolved.locate(&mut warnings);
        for w in warnings {
            tracing::warn!("{w}");
        }
        let invalid = |errors: Vec<crate::diag::Diagnostic>| {
            anyhow::Error::new(super::reload::Invalid(crate::diag::Diagnostics(errors)))
        };
        match valid {
            Ok(cat) if cat.packages.is_empty() && !allow_empty => {
                return Err(invalid(vec![super::load::no_packages()]))
            }
            Ok(cat) => cat,
            Err(_) => return Err(invalid(errors)),
        }
    };
    let builder = crate::store::Builder::create(&db)?;
    if let Some(images) = resolved.catalog_info() {
        builder.set_info("images", &images)?;
    }
    builder.finish(&cat, &digest, &mut |_, _| {})?;
    make_world_readable(&db);
    let content = match render {
        Some((path, prev)) => Some(Content::write(&cat, path, prev)?),
        None => None,
    };
    drop(cat);
    Ok((Store::open_unverified(&db)?, guard, content))
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

struct TempDirGuard(#[allow(dead_code)] tempfile::TempDir);

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
        let (_store, _, _) = prepare(
            None,
            Some(dir.path()),
            false,
            &Default::default(),
            None,
            false,
        )
        .unwrap();
        let mode = std::fs::metadata(dir.path().join(CACHE_DB))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
    }
}
