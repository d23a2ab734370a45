//! The gRPC server: `api.Registry`, `api.ExperimentalRegistry`, `opreg.v1.Upgrades`,
//! `grpc.health.v1.Health` and reflection (v1 and v1alpha) on one h2c port.
//!
//! Start-up: the listener opens at once and health answers NOT_SERVING while the catalog
//! loads; once the store is open every service answers and health is SERVING for the server
//! and each of its services (NOT_FOUND for other names, [`health`]). Opening checks only what
//! is cheap (header, file size, format, schema version); SQLite's check of every page runs right after, and a damaged file stops the
//! server with exit code 1 and the reason, as a failed load does. Shutdown: SIGTERM or SIGINT stops accepting, lets in-flight calls finish
//! within the grace period, then exits 0. After a swap of the served version every open
//! connection gets a GOAWAY (`conn`). The server only reads the store. The four unary
//! bundle RPCs are answered piece by piece, in front of tonic ([`direct`]).
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | start-up, the integrity check, shutdown |
//! | [`registry`] | `api.Registry` and `api.ExperimentalRegistry`, answered from the store |
//! | [`direct`] | the unary bundle RPCs answered in front of tonic |
//! | [`upgrades`] | `opreg.v1.Upgrades`: upgrade resolution over the served catalog |
//! | [`health`] | `grpc.health.v1.Health` |
//! | [`services`] | every service and method served, by name, from the descriptors |

pub mod direct;
pub mod health;
pub mod registry;
pub mod services;
pub mod upgrades;

use crate::api;
use crate::store::Store;
use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tonic::Status;

/// What the services share: the served version of the store, once loaded. A reload swaps in
/// a new one ([`State::set`]); a call takes the store once when it starts and keeps it, so
/// calls and streams in flight finish on the version they started with.
#[derive(Default)]
pub struct State {
    store: arc_swap::ArcSwapOption<Store>,
    /// Bumped by every swap after the first load: connections then get a GOAWAY.
    generation: tokio::sync::watch::Sender<u64>,
    /// Set when the integrity check failed: health turns NOT_SERVING while the server exits.
    failed: AtomicBool,
}

impl State {
    pub fn store(&self) -> Result<Store, Status> {
        if self.failed.load(Ordering::Relaxed) {
            return Err(Status::unavailable("the catalog database is damaged"));
        }
        self.store
            .load_full()
            .map(|s| Store::clone(&s))
            .ok_or_else(|| Status::unavailable("the catalog is still loading"))
    }
    pub fn is_loaded(&self) -> bool {
        self.store.load().is_some() && !self.failed.load(Ordering::Relaxed)
    }
    fn fail(&self) {
        self.failed.store(true, Ordering::Relaxed);
    }
    /// Serves `store` from now on (the first load, or a reload's swap).
    /// Changes with every swap after the first load.
    pub fn generation(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }
    pub fn set(&self, store: Store) {
        let swapped = self.store.swap(Some(Arc::new(store))).is_some();
        if swapped {
            self.generation.send_modify(|g| *g += 1);
        }
    }
}

/// Shortens a status message that echoes client input. The message travels in an HTTP/2
/// trailer and clients cap header lists (hyper and tonic at 16 KiB), so a lookup of a 1 MB name
/// would otherwise reach the caller as a protocol error instead of NOT_FOUND. Keeps the start
/// and the end (`... not found`) of a long message.
pub(crate) fn clip(msg: String) -> String {
    crate::text::elide(&msg, 512 + 128 + 64, 128).into_owned()
}

pub struct Options {
    pub port: u16,
    /// How long in-flight calls may run after a stop signal.
    pub grace: Duration,
    /// The shared state (a reloader keeps a handle to swap versions); a new one when `None`.
    pub state: Option<Arc<State>>,
    /// Metrics and per-call logs of every gRPC call.
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
    /// The HTTP port (catalogd API, health, metrics), stopped together with the gRPC port.
    pub beside: Option<Beside>,
    /// `--tls-cert` and `--tls-key`: TLS on both ports.
    pub tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// Raised on a stop signal, so that a catalog build still running stops too.
    pub cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Timeouts for slow and idle clients and the connection bound, on each port.
    pub limits: crate::conn::Limits,
}

/// Another port served beside gRPC and stopped with it (the HTTP port): given the future that
/// resolves when the server stops, the future that serves the port.
pub type Beside = Box<
    dyn FnOnce(
            std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send>>
        + Send,
>;

/// Binds `[::]:port` (all interfaces, IPv4 and IPv6), falling back to `0.0.0.0` where the
/// host has no IPv6.
pub async fn bind(port: u16) -> Result<TcpListener> {
    match TcpListener::bind(SocketAddr::from(([0u16; 8], port))).await {
        Ok(l) => Ok(l),
        Err(_) => TcpListener::bind(SocketAddr::from(([0u8; 4], port)))
            .await
            .with_context(|| format!("failed to listen on port {port}")),
    }
}

/// Serves until a stop signal. `load` runs on the blocking pool after the listener is up.
pub async fn serve(
    listener: TcpListener,
    opts: Options,
    load: impl FnOnce() -> Result<Store> + Send + 'static,
) -> Result<()> {
    // TLS files are read first: a bad one stops the start with one line naming it.
    let grpc_tls = match &opts.tls {
        Some((cert, key)) => Some(crate::conn::tls::server_config(cert, key, &[b"h2"])?),
        None => None,
    };
    let state = opts.state.clone().unwrap_or_default();
    let registry = registry::RegistryService {
        state: state.clone(),
    };
    let upgrades = upgrades::UpgradesService {
        state: state.clone(),
    };
    let health = health::HealthService {
        state: state.clone(),
    };
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;

    let local = listener.local_addr()?;
    let mut stop = StopSignal::install()?;
    tracing::info!(address = %local, "listening");

    let loader_state = state.clone();
    let (fatal_tx, mut fatal_rx) = tokio::sync::mpsc::channel::<anyhow::Error>(1);
    // Loading and the integrity check count as work: an idle server gives memory back only
    // after them.
    let busy = opts.metrics.as_ref().map(|m| m.activity.busy());
    tokio::spawn(load_then_check(load, loader_state, fatal_tx, busy));

    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (http_stop_tx, http_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let http = opts.beside.map(|serve| {
        tokio::spawn(serve(Box::pin(async {
            let _ = http_stop_rx.await;
        })))
    });
    let routes = tonic::service::Routes::new(
        crate::served_api::registry_server::RegistryServer::new(registry.clone())
            .max_encoding_message_size(usize::MAX)
            .max_decoding_message_size(direct::MAX_REQUEST),
    )
    .add_service(
        api::experimental_registry_server::ExperimentalRegistryServer::new(registry.clone())
            .max_encoding_message_size(usize::MAX),
    )
    .add_service(crate::upgrades_api::upgrades_server::UpgradesServer::new(
        upgrades,
    ))
    .add_service(tonic_health::pb::health_server::HealthServer::new(health))
    .add_service(reflection_v1)
    .add_service(reflection_v1alpha)
    .prepare();
    let routes = direct::Direct {
        inner: routes,
        registry,
    };
    let svc = tower::Layer::layer(
        &crate::metrics::layer::MetricsLayer::grpc(
            opts.metrics
                .unwrap_or_else(|| Arc::new(crate::metrics::Metrics::new(false))),
            services::method_label,
        ),
        routes,
    );
    // Served connection by connection (`conn`), so that a swap can send GOAWAY to each.
    let server = crate::conn::serve(
        listener,
        svc,
        crate::conn::Listen {
            http2_only: true,
            tls: grpc_tls,
            goaway: Some(state.generation()),
            limits: opts.limits,
        },
        async {
            let _ = stop_rx.await;
        },
    );
    let mut server = Box::pin(server);

    tokio::select! {
        res = &mut server => return res.context("server failed"),
        Some(e) = fatal_rx.recv() => return Err(e),
        sig = stop.recv() => {
            if let Some(c) = &opts.cancel {
                c.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            tracing::info!(signal = sig, grace_seconds = opts.grace.as_secs_f64(), "stopping: finishing in-flight calls");
        }
    }
    let _ = stop_tx.send(());
    let _ = http_stop_tx.send(());
    match tokio::time::timeout(opts.grace, &mut server).await {
        Ok(res) => res.context("server failed during shutdown")?,
        Err(_) => tracing::warn!("grace period over; closing remaining calls"),
    }
    if let Some(h) = http {
        if let Ok(Ok(Err(e))) = tokio::time::timeout(opts.grace, h).await {
            tracing::warn!("{e:#}");
        }
    }
    tracing::info!("stopped");
    Ok(())
}

/// Loads the store on the blocking pool and serves it, then runs the full integrity check; a
/// failure of either is sent to `fatal` (it stops the server). `_busy` keeps the server busy
/// meanwhile: an idle server gives memory back only after them.
async fn load_then_check<B>(
    load: impl FnOnce() -> Result<Store> + Send + 'static,
    loader_state: Arc<State>,
    fatal_tx: tokio::sync::mpsc::Sender<anyhow::Error>,
    _busy: B,
) {
    let started = std::time::Instant::now();
    // The package index is read before SERVING, so GetPackage and the channel checks
    // never touch SQLite.
    let load = move || {
        let store = load()?;
        store.package_index()?;
        Ok::<_, anyhow::Error>(store)
    };
    match tokio::task::spawn_blocking(load).await {
        Ok(Ok(store)) => {
            loader_state.set(store.clone());
            tracing::info!(
                elapsed_ms = started.elapsed().as_millis() as u64,
                "catalog loaded; serving"
            );
            // The loader checked what is cheap (header, size, format, version); the full
            // page check reads the whole file, so it runs after SERVING. A damaged
            // database still stops the server, with the same message, a moment later.
            let check = move || {
                let checked = store.verify();
                // The check read the whole file; what its thread freed is given back
                // now, not when the idle thread exits.
                crate::memory::collect_this_thread();
                checked
            };
            match tokio::task::spawn_blocking(check).await {
                Ok(Ok(())) => tracing::info!(
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "integrity check passed"
                ),
                Ok(Err(e)) => {
                    loader_state.fail();
                    let _ = fatal_tx.send(e).await;
                }
                Err(e) => {
                    loader_state.fail();
                    let _ = fatal_tx
                        .send(anyhow::anyhow!("integrity check panicked: {e}"))
                        .await;
                }
            }
        }
        Ok(Err(e)) => {
            let _ = fatal_tx.send(e).await;
        }
        Err(e) => {
            let _ = fatal_tx
                .send(anyhow::anyhow!("catalog loader panicked: {e}"))
                .await;
        }
    }
}

/// SIGTERM and SIGINT, caught from [`StopSignal::install`] on: a signal that comes before the
/// server waits for it (while the listener is announced, say) is kept, not left to its default
/// action. SIGTERM is handled explicitly: as PID 1 in a container it has no default action.
struct StopSignal {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl StopSignal {
    fn install() -> Result<StopSignal> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(StopSignal {
                term: signal(SignalKind::terminate()).context("installing a SIGTERM handler")?,
                int: signal(SignalKind::interrupt()).context("installing a SIGINT handler")?,
            })
        }
        #[cfg(not(unix))]
        Ok(StopSignal {})
    }

    /// Resolves on the first of them, naming it.
    async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.int.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "interrupt"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn clip_keeps_short_messages_and_both_ends_of_long_ones() {
        assert_eq!(
            clip("package \"x\" not found".into()),
            "package \"x\" not found"
        );
        let long = format!("package \"{}\" not found", "é".repeat(300_000));
        let c = clip(long);
        assert!(c.len() < 1024, "{}", c.len());
        assert!(c.starts_with("package \"é"));
        assert!(c.ends_with("é\" not found"));
        assert!(c.contains("bytes elided"));
    }
}
