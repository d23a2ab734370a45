//! `opreg serve`'s served versions and content swaps without a restart.
//!
//! A version is a built store plus, with `--http-port`, its JSONL file ([`crate::http::content`]).
//! A reload (SIGHUP at any time; file changes with `--watch`, debounced; a moved image tag
//! with `--poll-interval`, [`super::poll`]) re-reads the source,
//! validates it and builds the new version in a private directory beside the old one, then
//! swaps it in: HTTP first, then gRPC (whose swap also makes existing connections reconnect).
//! Calls in flight keep the version they started with; the old version's files go when its last
//! reader finishes. A version that does not build (invalid, unreadable, deleted source) is
//! logged with all its errors and counted; the old one keeps being served. Reloads run one at a
//! time: triggers that arrive during a build coalesce into one more build.

use crate::http::content::Content;
use crate::http::HttpState;
use crate::metrics::{CatalogFacts, Metrics};
use crate::server::State;
use crate::store::Store;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// One built version, ready to swap in.
pub struct Version {
    pub store: Store,
    pub content: Option<Content>,
    pub facts: CatalogFacts,
}

/// Builds version `generation` (0 is the start-up build).
pub type BuildFn = dyn Fn(u64, Option<SystemTime>) -> crate::error::Result<Version> + Send + Sync;

pub struct Reloader {
    pub state: Arc<State>,
    pub http: Option<Arc<HttpState>>,
    pub metrics: Arc<Metrics>,
    pub build: Arc<BuildFn>,
}

/// How long a burst of file events must be quiet before a reload starts.
const QUIET: Duration = Duration::from_millis(300);
/// A reload starts at the latest this long after the first event of a burst.
const MAX_WAIT: Duration = Duration::from_secs(2);

impl Reloader {
    /// Makes `v` the served version for HTTP and metrics (gRPC takes `v.store` separately,
    /// from the caller, so it can be swapped last).
    fn install_http(&self, v: &mut Version) {
        self.metrics.set_catalog(&v.facts);
        if let (Some(h), Some(c)) = (&self.http, v.content.take()) {
            h.swap(c);
        }
    }

    /// The start-up build: HTTP and metrics are set here; the store goes to the server.
    pub fn initial(&self) -> crate::error::Result<Store> {
        let mut v = (self.build)(0, None)?;
        self.install_http(&mut v);
        let f = &v.facts;
        tracing::info!(
            source = %f.source,
            digest = %f.digest,
            packages = f.packages,
            channels = f.channels,
            bundles = f.bundles,
            "catalog built"
        );
        Ok(v.store)
    }

    /// Runs reloads until the process stops: on SIGHUP, on changes under `watch`, and when
    /// `poll` finds the image tag moved.
    pub async fn run(&self, watch: Option<PathBuf>, poll: Option<super::poll::Poll>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
        let _watcher = watch.as_deref().and_then(|p| start_watch(p, tx.clone()));
        if let Some(p) = poll {
            tokio::spawn(p.run(self.state.clone(), tx.clone()));
        }
        #[cfg(unix)]
        {
            let tx = tx.clone();
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
                Ok(mut hup) => {
                    tokio::spawn(async move {
                        while hup.recv().await.is_some() {
                            if tx.send("SIGHUP").is_err() {
                                break;
                            }
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot handle SIGHUP; reloads only with --watch")
                }
            }
        }
        drop(tx);
        let mut generation = 0u64;
        while let Some(first) = rx.recv().await {
            // Debounce: wait for QUIET without events, at most MAX_WAIT.
            let deadline = tokio::time::Instant::now() + MAX_WAIT;
            let mut triggers = 1u32;
            loop {
                let until = (tokio::time::Instant::now() + QUIET).min(deadline);
                match tokio::time::timeout_at(until, rx.recv()).await {
                    Ok(Some(_)) => triggers += 1,
                    Ok(None) | Err(_) => break,
                }
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
            }
            generation += 1;
            self.reload_once(generation, first, triggers).await;
        }
    }

    async fn reload_once(&self, generation: u64, trigger: &str, triggers: u32) {
        let started = std::time::Instant::now();
        let build = self.build.clone();
        let prev = self
            .http
            .as_ref()
            .and_then(|h| h.content())
            .map(|c| c.modified);
        match tokio::task::spawn_blocking(move || build(generation, prev)).await {
            Ok(Ok(mut v)) => {
                self.install_http(&mut v);
                self.state.set(v.store.clone());
                self.metrics.reloaded("ok");
                let f = &v.facts;
                tracing::info!(
                    trigger,
                    events = triggers,
                    generation,
                    digest = %f.digest,
                    packages = f.packages,
                    channels = f.channels,
                    bundles = f.bundles,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "reloaded: serving the new version"
                );
            }
            Ok(Err(e)) => {
                let invalid = matches!(e, crate::error::Error::Invalid { .. });
                self.metrics
                    .reloaded(if invalid { "invalid" } else { "failed" });
                tracing::error!(
                    trigger,
                    generation,
                    "reload failed; still serving the previous version: {}",
                    e.detail()
                );
            }
            Err(e) => {
                self.metrics.reloaded("failed");
                tracing::error!(
                    generation,
                    "reload panicked; still serving the previous version: {e}"
                );
            }
        }
    }
}

/// Watches SOURCE: a directory recursively; a file through its parent directory, so that an
/// editor's replace-by-rename is seen. Events go to `tx` (the reload loop debounces them).
fn start_watch(
    source: &Path,
    tx: tokio::sync::mpsc::UnboundedSender<&'static str>,
) -> Option<notify::RecommendedWatcher> {
    use notify::{RecursiveMode, Watcher};
    let is_dir = source.is_dir();
    // The watcher names changed files by absolute paths: compare with an absolute target (a
    // relative `wf/cat.json` would never match), through the parent's real path.
    let (root, target) = if is_dir {
        (source.to_path_buf(), source.to_path_buf())
    } else {
        let parent = match source.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let parent = std::fs::canonicalize(&parent).unwrap_or(parent);
        let name = source.file_name().map(PathBuf::from).unwrap_or_default();
        (parent.clone(), parent.join(name))
    };
    let handler = move |ev: notify::Result<notify::Event>| match ev {
        Ok(ev) if ev.kind.is_access() => {}
        Ok(ev) => {
            if is_dir || ev.paths.iter().any(|p| p == &target) {
                let _ = tx.send("watch");
            }
        }
        Err(e) => tracing::warn!(error = %e, "file watch error"),
    };
    let mut w = match notify::recommended_watcher(handler) {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(error = %e, "cannot watch {}; reload with SIGHUP", source.display());
            return None;
        }
    };
    let mode = if is_dir {
        RecursiveMode::Recursive
    } else {
        RecursiveMode::NonRecursive
    };
    if let Err(e) = w.watch(&root, mode) {
        tracing::error!(error = %e, "cannot watch {}; reload with SIGHUP", root.display());
        return None;
    }
    tracing::info!(path = %root.display(), "watching the source for changes");
    Some(w)
}

/// Counts for the gauges and the start-up line.
pub fn facts(store: &Store, source: &str, built: SystemTime) -> Result<CatalogFacts> {
    let (packages, channels, bundles) = store.counts()?;
    Ok(CatalogFacts {
        source: source.to_string(),
        digest: store.info("source_digest")?.unwrap_or_default(),
        packages: packages as usize,
        channels: channels as usize,
        bundles: bundles as usize,
        built,
    })
}
