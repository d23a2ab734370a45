//! Prometheus metrics (`prometheus-client`), served on the HTTP port's `/metrics`:
//!
//! * per gRPC method and status code, and per HTTP route and status: a request counter, a
//!   latency histogram and a response-bytes counter ([`layer`], one tower layer for both);
//! * the served catalog: packages, channels, bundles (`olm.bundle` objects), the source digest
//!   as an info-style gauge, the build time, reloads and the last reload's result;
//! * the process: resident memory, CPU seconds, open files, threads, start time (from
//!   `/proc/self`, read at each scrape).

pub mod layer;

use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderValue};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GrpcLabels {
    /// A served method's path, or `other` (`server::services::method_label`).
    pub method: &'static str,
    pub code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    pub route: String,
    pub code: String,
}

/// catalogd's label set: the status code only.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CodeLabels {
    pub code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceLabels {
    pub source: String,
    pub digest: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub result: String,
}

type FGauge = Gauge<f64, AtomicU64>;

/// Every metric opreg exports, and whether each call is also logged.
pub struct Metrics {
    registry: Registry,
    pub grpc_requests: Family<GrpcLabels, Counter>,
    pub grpc_seconds: Family<GrpcLabels, Histogram>,
    pub grpc_bytes: Family<GrpcLabels, Counter>,
    pub http_requests: Family<HttpLabels, Counter>,
    pub http_seconds: Family<HttpLabels, Histogram>,
    pub http_bytes: Family<HttpLabels, Counter>,
    /// The HTTP request histogram under catalogd's name, labels and buckets, so that
    /// dashboards built for catalogd (its Apdex queries) work unchanged.
    pub catalogd_http_seconds: Family<CodeLabels, Histogram>,
    pub packages: Gauge,
    pub channels: Gauge,
    pub bundles: Gauge,
    pub source: Family<SourceLabels, Gauge>,
    pub built: FGauge,
    pub reloads: Family<ResultLabels, Counter>,
    /// 1 when the last reload succeeded (or none was tried), 0 when it failed.
    pub last_reload_ok: Gauge,
    /// New image digests a poll found that the signature policy refused (each once).
    pub refused_images: Counter,
    rss: Gauge,
    /// `process_cpu_seconds_total`, a counter as Prometheus' process collector names it (so
    /// dashboards can `rate()` it), advanced to the sampled CPU time under `cpu_sample`.
    cpu: Counter<f64, AtomicU64>,
    cpu_sample: std::sync::Mutex<()>,
    fds: Gauge,
    threads: Gauge,
    start: FGauge,
    /// One log line per call (`--no-call-log` turns it off).
    pub log_calls: bool,
    /// Calls started and in flight (the server gives memory back when there are none).
    pub activity: std::sync::Arc<crate::memory::Activity>,
}

fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.000_25, 2.0, 16))
}

/// catalogd's buckets: every 100 ms to 1 s, then up to 4 s, and 10 s.
pub const CATALOGD_BUCKETS: [f64; 19] = [
    0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.6, 2.0, 2.4, 2.8, 3.2, 3.6, 4.0, 10.0,
];

fn catalogd_latency() -> Histogram {
    Histogram::new(CATALOGD_BUCKETS)
}

impl Metrics {
    pub fn new(log_calls: bool) -> Metrics {
        let mut r = Registry::default();
        let m = Metrics {
            grpc_requests: Family::default(),
            grpc_seconds: Family::new_with_constructor(latency),
            grpc_bytes: Family::default(),
            http_requests: Family::default(),
            http_seconds: Family::new_with_constructor(latency),
            http_bytes: Family::default(),
            catalogd_http_seconds: Family::new_with_constructor(catalogd_latency),
            packages: Gauge::default(),
            channels: Gauge::default(),
            bundles: Gauge::default(),
            source: Family::default(),
            built: FGauge::default(),
            reloads: Family::default(),
            last_reload_ok: Gauge::default(),
            refused_images: Counter::default(),
            rss: Gauge::default(),
            cpu: Counter::default(),
            cpu_sample: std::sync::Mutex::new(()),
            fds: Gauge::default(),
            threads: Gauge::default(),
            start: FGauge::default(),
            log_calls,
            activity: Default::default(),
            registry: Registry::default(),
        };
        m.last_reload_ok.set(1);
        r.register(
            "opreg_grpc_requests",
            "gRPC calls by method and status code",
            m.grpc_requests.clone(),
        );
        r.register(
            "opreg_grpc_request_duration_seconds",
            "gRPC call duration (streams: until the last message)",
            m.grpc_seconds.clone(),
        );
        r.register(
            "opreg_grpc_response_bytes",
            "gRPC response body bytes (framed messages)",
            m.grpc_bytes.clone(),
        );
        r.register(
            "opreg_http_requests",
            "HTTP requests by route and status code",
            m.http_requests.clone(),
        );
        r.register(
            "opreg_http_request_duration_seconds",
            "HTTP request duration (until the body is sent)",
            m.http_seconds.clone(),
        );
        r.register(
            "opreg_http_response_bytes",
            "HTTP response body bytes as sent (after gzip)",
            m.http_bytes.clone(),
        );
        r.register(
            "catalogd_http_request_duration_seconds",
            "Histogram of request duration in seconds",
            m.catalogd_http_seconds.clone(),
        );
        r.register(
            "opreg_catalog_packages",
            "packages in the served catalog",
            m.packages.clone(),
        );
        r.register(
            "opreg_catalog_channels",
            "channels in the served catalog",
            m.channels.clone(),
        );
        r.register(
            "opreg_catalog_bundles",
            "olm.bundle objects in the served catalog",
            m.bundles.clone(),
        );
        r.register(
            "opreg_catalog_source_info",
            "the served source and its digest (value 1)",
            m.source.clone(),
        );
        r.register(
            "opreg_catalog_build_time_seconds",
            "when the served content was built (Unix time)",
            m.built.clone(),
        );
        r.register(
            "opreg_catalog_reloads",
            "reloads by result (ok, invalid, failed)",
            m.reloads.clone(),
        );
        r.register(
            "opreg_images_refused",
            "new image digests that the signature policy refused, each counted once (serve IMAGE --poll-interval)",
            m.refused_images.clone(),
        );
        r.register(
            "opreg_catalog_last_reload_success",
            "1 if the last reload succeeded or none was tried",
            m.last_reload_ok.clone(),
        );
        r.register(
            "process_resident_memory_bytes",
            "resident memory",
            m.rss.clone(),
        );
        r.register(
            // The exposition adds `_total` to a counter's name.
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            m.cpu.clone(),
        );
        r.register("process_open_fds", "open file descriptors", m.fds.clone());
        r.register("process_threads", "OS threads", m.threads.clone());
        r.register(
            "process_start_time_seconds",
            "process start time (Unix time)",
            m.start.clone(),
        );
        m.start.set(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
        );
        Metrics { registry: r, ..m }
    }

    /// Records the served version's counts and identity.
    pub fn set_catalog(&self, c: &CatalogFacts) {
        self.packages.set(c.packages as i64);
        self.channels.set(c.channels as i64);
        self.bundles.set(c.bundles as i64);
        self.source.clear();
        self.source
            .get_or_create(&SourceLabels {
                source: c.source.clone(),
                digest: c.digest.clone(),
            })
            .set(1);
        self.built.set(
            c.built
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
        );
    }

    /// Counts a reload attempt: `ok`, `invalid` (the new version did not validate) or `failed`.
    pub fn reloaded(&self, result: &str) {
        self.reloads
            .get_or_create(&ResultLabels {
                result: result.to_string(),
            })
            .inc();
        self.last_reload_ok.set(i64::from(result == "ok"));
    }

    /// The exposition (OpenMetrics text, which Prometheus reads).
    pub fn render(&self) -> Response {
        self.sample_process();
        let mut s = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut s, &self.registry);
        let mut r = Response::new(Body::from(s));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        );
        r
    }

    fn sample_process(&self) {
        // /proc/self/stat: utime and stime (fields 14, 15) in clock ticks, threads (field 20),
        // rss (field 24) in pages; the command name (field 2) may hold spaces, so split after ')'.
        if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
            if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
                let f: Vec<&str> = rest.split_whitespace().collect();
                let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
                // SAFETY: sysconf reads a constant.
                let (tick, page) = unsafe {
                    (
                        libc::sysconf(libc::_SC_CLK_TCK) as f64,
                        libc::sysconf(libc::_SC_PAGESIZE) as f64,
                    )
                };
                // After ')': field 3 is index 0.
                let seconds = (num(11) + num(12)) / tick.max(1.0);
                let _one_at_a_time = self.cpu_sample.lock();
                let delta = seconds - self.cpu.get();
                if delta > 0.0 {
                    self.cpu.inc_by(delta);
                }
                self.threads.set(num(17) as i64);
                self.rss.set((num(21) * page) as i64);
            }
        }
        if let Ok(d) = std::fs::read_dir("/proc/self/fd") {
            self.fds.set(d.count() as i64);
        }
    }
}

/// What the catalog gauges and the start-up line say about a served version.
#[derive(Clone, Debug)]
pub struct CatalogFacts {
    pub source: String,
    pub digest: String,
    pub packages: usize,
    pub channels: usize,
    pub bundles: usize,
    pub built: std::time::SystemTime,
}

/// gRPC status code names as grpc-go prints them (`OK`, `NotFound`, ...).
pub fn grpc_code_name(code: i32) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "Canceled",
        "Unknown",
        "InvalidArgument",
        "DeadlineExceeded",
        "NotFound",
        "AlreadyExists",
        "PermissionDenied",
        "ResourceExhausted",
        "FailedPrecondition",
        "Aborted",
        "OutOfRange",
        "Unimplemented",
        "Internal",
        "Unavailable",
        "DataLoss",
        "Unauthenticated",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("Unknown")
}
