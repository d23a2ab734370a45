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

use crate::error::Error;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// Accepted for compatibility with `opm serve` and ignored, with a warning.
    #[arg(long, hide = true)]
    pub pprof_capture_profiles: bool,
    /// Worker threads answering requests [default: the number of cores available to the
    /// process]. A replica is read-only: scale out with more replicas rather than threads.
    #[arg(long, env = "OPREG_THREADS", value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Also serve catalogd's HTTP API (OLM v1 clients: /catalogs/NAME/api/v1/all and
    /// /api/v1/metas), /healthz, /readyz and Prometheus /metrics on this port.
    #[arg(long, value_name = "PORT")]
    pub http_port: Option<u16>,
    /// The catalog's name in the HTTP API's paths (a DNS-1123 subdomain, as catalogd's names).
    #[arg(long, default_value = "catalog", value_name = "NAME", value_parser = parse_catalog_name)]
    pub catalog_name: String,
    /// Reload when SOURCE (a directory or file) changes; changes are debounced and land
    /// within seconds. SIGHUP reloads at any time, with or without --watch.
    #[arg(long)]
    pub watch: bool,
    /// For an image SOURCE: ask the registry every D (30s, 5m, 1h30m) which digest the tag
    /// names, and reload when it changes (only the manifest is read until then).
    #[arg(long, value_name = "D", value_parser = parse_interval)]
    pub poll_interval: Option<Duration>,
    /// Serve TLS on the gRPC port and the HTTP port with this PEM certificate (chain).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Close a connection (either port) that has not sent a whole request this many seconds
    /// after it opened; on HTTP/1.1 also the longest wait for each later request's header,
    /// idle time included.
    #[arg(long, default_value = "10", value_name = "SECONDS", value_parser = parse_seconds)]
    pub request_timeout: Duration,
    /// At most this many open connections per port (an idle one holds about 22 KB); more
    /// wait to be accepted until one closes.
    #[arg(long, default_value_t = 1000, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Do not log one line per gRPC call and HTTP request.
    #[arg(long)]
    pub no_call_log: bool,
    /// Do not serve catalogd's GraphQL endpoint (POST /catalogs/NAME/api/v1/graphql) on the
    /// HTTP port.
    #[arg(long)]
    pub no_graphql: bool,
    #[command(flatten)]
    pub image: super::ImageArgs,
}

fn parse_catalog_name(s: &str) -> Result<String, crate::error::Error> {
    let errs = crate::names::dns1123_subdomain_errors(s);
    if errs.is_empty() {
        Ok(s.to_string())
    } else {
        Err(crate::error::Error::Usage(format!(
            "{s:?} is not a DNS-1123 subdomain: {}",
            errs.join("; ")
        )))
    }
}

/// `--poll-interval`: Go's duration syntax (`30s`, `5m`, `1h30m`, `1.5s`, `500ms`, parsed as
/// the health probe parses its flags), at least 100 ms and at most a day.
fn parse_interval(s: &str) -> Result<Duration, crate::duration::Invalid> {
    crate::duration::parse_within(s, Duration::from_millis(100), Duration::from_secs(86400))
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

impl Args {
    fn options(self) -> crate::serve::ServeOptions {
        crate::serve::ServeOptions {
            source: self.source,
            port: self.port,
            cache_dir: self.cache_dir,
            cache_only: self.cache_only,
            cache_enforce_integrity: self.cache_enforce_integrity,
            fallback_demo: self.fallback_demo,
            grace_period: self.grace_period,
            allow_empty: self.allow_empty,
            threads: self.threads.map(usize::from),
            http_port: self.http_port,
            catalog_name: self.catalog_name,
            watch: self.watch,
            poll_interval: self.poll_interval,
            tls: self.tls_cert.zip(self.tls_key),
            call_log: !self.no_call_log,
            graphql: !self.no_graphql,
            limits: crate::conn::Limits {
                request_timeout: self.request_timeout,
                max_connections: self.max_connections as usize,
            },
            image: self.image.options(),
        }
    }
}

pub fn run(a: Args) -> super::Ended {
    if let Some(addr) = &a.pprof_addr {
        tracing::warn!(pprof_addr = %addr, "--pprof-addr is ignored: opreg has no profiling endpoint");
    }
    if a.pprof_capture_profiles {
        tracing::warn!("--pprof-capture-profiles is ignored: opreg has no profiling endpoint");
    }
    let termination_log = a.termination_log.clone();
    match crate::serve::run(a.options()) {
        Ok(()) => super::Ended::Done,
        Err(e) => {
            write_termination_log(&termination_log, &e);
            match e {
                // As the server has always said it: every diagnostic, then (for more than one)
                // an error line with the count.
                Error::Invalid {
                    mut errors,
                    warnings,
                } => {
                    super::offer_allow_empty(&mut errors);
                    warnings.iter().for_each(super::output::diagnostic);
                    errors.iter().for_each(super::output::diagnostic);
                    if errors.len() > 1 {
                        super::output::error(format_args!(
                            "{} error(s): the catalog is invalid",
                            errors.len()
                        ));
                    }
                    super::Ended::Reported
                }
                other => super::Ended::Failed(other),
            }
        }
    }
}

/// The reason for a fatal start-up error, on one line, in the file Kubernetes shows as the
/// container's termination message (a warning in the debug log if that fails).
fn write_termination_log(termination_log: &Path, e: &Error) {
    let log = match e {
        Error::Invalid { errors, .. } if errors.len() == 1 => {
            crate::error::diagnostic_line(&errors[0])
        }
        other => crate::text::elide(&other.detail(), 4000, 200).into_owned(),
    };
    if let Err(w) = std::fs::write(termination_log, format!("{log}\n")) {
        tracing::debug!(path = %termination_log.display(), error = %w, "could not write the termination log");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_as_go_writes_them() {
        assert_eq!(parse_interval("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_interval("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_interval("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_interval("500ms"), Ok(Duration::from_millis(500)));
        for bad in ["", "1", "s", "1x", "-1s", "1..2s", "50ms", "25h"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }
}
