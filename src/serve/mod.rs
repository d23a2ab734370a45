//! `opreg serve` as a library function: the runtime, the start-up build, reloads, and the
//! gRPC and HTTP ports, until a stop signal.
//!
//! SOURCE may be a built opreg database (opened read-only, served directly) or anything
//! `opreg ingest` accepts (built at start-up through [`crate::ingest::build`], the one build
//! path). With no SOURCE the embedded demo catalog is served. The cache options mean what they
//! mean to `opm serve` ([`cache`]). Reloads ([`reload`]) come on SIGHUP, on file changes
//! (`watch`) and when an image tag moves ([`poll`]).

pub mod cache;
pub mod poll;
pub mod reload;

use crate::cache::Prepare;
use crate::error::{Error, Result};
use cache::WorkDir;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// What `opreg serve` was asked to do.
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// A built database or any ingest SOURCE; `None` serves the demo.
    pub source: Option<PathBuf>,
    pub port: u16,
    /// Keep the built database here and reuse it while the source is unchanged.
    pub cache_dir: Option<PathBuf>,
    /// Build (or check) the cache, then return without serving.
    pub cache_only: bool,
    /// Refuse to start unless the cache matches [default: with a cache dir, unless cache-only].
    pub cache_enforce_integrity: Option<bool>,
    /// Serve the demo when SOURCE does not exist.
    pub fallback_demo: bool,
    /// How long in-flight calls may run after a stop signal.
    pub grace_period: Duration,
    pub allow_empty: bool,
    /// Worker threads [default: the cores available].
    pub threads: Option<usize>,
    /// catalogd's HTTP API, health and metrics on this port.
    pub http_port: Option<u16>,
    /// The catalog's name in the HTTP paths.
    pub catalog_name: String,
    /// Reload when SOURCE changes.
    pub watch: bool,
    /// Reload when the image tag moves, checked this often.
    pub poll_interval: Option<Duration>,
    /// Certificate and key: TLS on both ports.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// One log line per call.
    pub call_log: bool,
    /// catalogd's GraphQL endpoint on the HTTP port.
    pub graphql: bool,
    /// Timeouts for slow clients and the connection bound, on each port.
    pub limits: crate::conn::Limits,
    pub image: crate::image::ImageOptions,
}

impl ServeOptions {
    /// Whether the cache must match the source.
    fn enforce(&self) -> bool {
        self.cache_enforce_integrity
            .unwrap_or(self.cache_dir.is_some() && !self.cache_only)
    }

    /// Options that cannot go together: a usage error, before anything starts.
    pub fn check(&self) -> Result<()> {
        if self.enforce() && self.cache_dir.is_none() {
            return Err(Error::Usage(
                "--cache-dir must be specified with --cache-enforce-integrity".into(),
            ));
        }
        if self.poll_interval.is_some() && self.source.as_deref().is_none_or(crate::image::is_local)
        {
            return Err(Error::Usage("--poll-interval needs an image SOURCE (registry/repository:tag or oci:DIR:TAG); watch a directory or file with --watch".into()));
        }
        if self.watch && !self.source.as_deref().is_some_and(crate::image::is_local) {
            return Err(Error::Usage(
                "--watch needs a SOURCE directory or file".into(),
            ));
        }
        // Port 0 is "any free port": two of them never collide.
        if self.http_port == Some(self.port) && self.port != 0 && !self.cache_only {
            return Err(Error::Usage(format!(
                "--port and --http-port are both {}: the gRPC and HTTP ports must differ",
                self.port
            )));
        }
        Ok(())
    }
}

/// Serves until SIGTERM or SIGINT (or, with `cache_only`, builds the cache and returns).
pub fn run(o: ServeOptions) -> Result<()> {
    o.check()?;
    // `--cache-only` builds and exits: a one-shot command, with ingest's allocator settings
    // (`ingest::build` sets them). SQLite on mimalloc, a server's setting, raised its peak to
    // 1.13x an ingest's (77.0 MB against 68.4, the benchmark's build peaks).
    if !o.cache_only {
        crate::memory::for_serving();
    }
    let workers = o.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
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
        .map_err(|e| Error::failed(format!("cannot start the runtime: {e}")))?;
    let res = rt.block_on(run_async(o));
    // A build interrupted by the stop signal polls its flag; whatever still runs on the
    // blocking pool is not waited for long.
    rt.shutdown_timeout(Duration::from_millis(500));
    // Batched call lines go out before anything else is printed, and before the exit.
    crate::log_sink::flush();
    match res {
        Err(Error::Interrupted) => Ok(()),
        other => other,
    }
}

async fn run_async(mut o: ServeOptions) -> Result<()> {
    if o.source.is_none() {
        tracing::warn!("no SOURCE given: serving the embedded demo catalog");
    }
    o.source = cache::effective_source(o.source.take(), o.fallback_demo);
    let enforce = o.enforce();
    let cancel = Arc::new(AtomicBool::new(false));
    if o.cache_only {
        return cache_only(o, enforce, cancel).await;
    }
    let listener = crate::server::bind(o.port).await?;
    let http_listener = match o.http_port {
        Some(p) => Some(crate::server::bind(p).await?),
        None => None,
    };
    let metrics = Arc::new(crate::metrics::Metrics::new(o.call_log));
    let state = Arc::new(crate::server::State::default());
    let idle_state = state.clone();
    let runtime = tokio::runtime::Handle::current();
    crate::log_sink::batch();
    crate::memory::Trimmer::spawn(metrics.activity.clone(), move || {
        crate::log_sink::flush();
        if let Ok(s) = idle_state.store() {
            s.close_idle_connections();
        }
        // Wake the idle workers, so that each parks again and collects its heap.
        for _ in 0..2 * runtime.metrics().num_workers() {
            runtime.spawn(async {});
        }
    });
    let http_state = http_listener.as_ref().map(|_| {
        let s = crate::http::HttpState::new(&o.catalog_name, metrics.clone());
        s.graphql.set_enabled(o.graphql);
        Arc::new(s)
    });
    let addrs = (
        listener.local_addr()?,
        http_listener.as_ref().map(|l| l.local_addr()).transpose()?,
    );
    // The server's working directory (the database when there is no cache dir, every
    // reload's database, the JSONL files), made on first use: a server given a cache dir on
    // a read-only root file system, with no HTTP listener, never needs it. Removed when serve
    // returns.
    let work = Arc::new(WorkDir::default());
    let build = build_fn(
        &o,
        enforce,
        work.clone(),
        http_state.is_some(),
        cancel.clone(),
    );
    let reloader = Arc::new(reload::Reloader {
        state: state.clone(),
        http: http_state.clone(),
        metrics: metrics.clone(),
        build,
    });
    // The HTTP port, beside gRPC and stopped with it. TLS files are read first: a bad one
    // stops the start with one line naming it.
    let beside: Option<crate::server::Beside> = match (http_listener, http_state) {
        (Some(listener), Some(st)) => {
            let tls = match &o.tls {
                Some((cert, key)) => Some(crate::conn::tls::server_config(
                    cert,
                    key,
                    &[b"h2", b"http/1.1"],
                )?),
                None => None,
            };
            let limits = o.limits;
            Some(Box::new(move |stop| {
                Box::pin(crate::http::serve(listener, st, tls, limits, stop))
            }))
        }
        _ => None,
    };
    let opts = crate::server::Options {
        port: o.port,
        grace: o.grace_period,
        state: Some(state.clone()),
        metrics: Some(metrics),
        beside,
        tls: o.tls.clone(),
        cancel: Some(cancel),
        limits: o.limits,
    };
    let watch = o.watch.then(|| o.source.clone()).flatten();
    let poll = o.poll_interval.map(|every| poll::Poll {
        source: o.source.clone().unwrap_or_default(),
        image: o.image.clone(),
        every,
        metrics: reloader.metrics.clone(),
    });
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
    let r = reloader.clone();
    let served = crate::server::serve(listener, opts, move || {
        let store = r.initial()?;
        tracing::info!(grpc = %addrs.0, http = %addrs.1.map_or("none".into(), |a| a.to_string()), "listen addresses");
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
        res = served => {
            drop(work);
            res.map_err(|e| match e.downcast::<Error>() {
                Ok(e) => e,
                Err(e) => Error::Failed(e),
            })
        }
        _ = reloads => unreachable!("the reload loop never ends"),
    }
}

/// `--cache-only`: build or check the cache, then return.
async fn cache_only(o: ServeOptions, enforce: bool, cancel: Arc<AtomicBool>) -> Result<()> {
    let stop = cancel.clone();
    let build = tokio::task::spawn_blocking(move || {
        // Without a cache dir the build only proves that the catalog builds.
        let tmp;
        let dir = match &o.cache_dir {
            Some(d) => d.clone(),
            None => {
                tmp = tempfile::Builder::new()
                    .prefix("opreg-serve-cache-")
                    .tempdir()
                    .map_err(|e| Error::failed(format!("cannot create a temporary cache directory; give a writable --cache-dir: {e}")))?;
                tmp.path().to_path_buf()
            }
        };
        let p = Prepare {
            cache_dir: &dir,
            enforce,
            image: &o.image,
            render: None,
            allow_empty: o.allow_empty,
            cancel: &cancel,
        };
        crate::cache::prepare(o.source.as_deref(), &p).map(|_| ())
    });
    tokio::select! {
        res = build => {
            res.map_err(|e| Error::failed(format!("the cache build failed: {e}")))??;
            tracing::info!("cache is ready");
            Ok(())
        }
        _ = tokio::signal::ctrl_c() => {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            Err(Error::Interrupted)
        }
    }
}

/// The function that builds version `generation`: the start-up build honours the cache dir
/// (the database lives in `work` otherwise); a reload builds beside the served version, never
/// over it and never in the cache, in a directory that goes when its last reader ends.
fn build_fn(
    o: &ServeOptions,
    enforce: bool,
    work: Arc<WorkDir>,
    with_http: bool,
    cancel: Arc<AtomicBool>,
) -> Arc<reload::BuildFn> {
    let (src, dir, image) = (o.source.clone(), o.cache_dir.clone(), o.image.clone());
    let allow_empty = o.allow_empty;
    let source_label = src
        .as_ref()
        .map(|s| s.display().to_string())
        .unwrap_or_else(|| "demo".to_string());
    Arc::new(move |generation, prev| {
        let jsonl = match with_http {
            true => Some(work.path()?.join(format!("catalog-{generation}.jsonl"))),
            false => None,
        };
        // A reload's directory, kept alive by the store it holds.
        let reload_dir = match generation {
            0 => None,
            g => Some(
                tempfile::Builder::new()
                    .prefix(&format!("v{g}-"))
                    .tempdir_in(work.path()?)?,
            ),
        };
        let cache_dir = match (&reload_dir, &dir) {
            (Some(d), _) => d.path().to_path_buf(),
            (None, Some(d)) => d.clone(),
            (None, None) => work.path()?.join("v0"),
        };
        let p = Prepare {
            cache_dir: &cache_dir,
            enforce: generation == 0 && enforce,
            image: &image,
            render: jsonl.as_deref().map(|j| (j, prev)),
            allow_empty,
            cancel: &cancel,
        };
        let built = crate::cache::prepare(src.as_deref(), &p)?;
        let (store, content) = match reload_dir {
            Some(d) => (built.store.keep_alive(d), built.content),
            None => (built.store, built.content),
        };
        let built = content
            .as_ref()
            .map(|c| c.modified)
            .unwrap_or_else(SystemTime::now);
        let facts = reload::facts(&store, &source_label, built)?;
        Ok(reload::Version {
            store,
            content,
            facts,
        })
    })
}
