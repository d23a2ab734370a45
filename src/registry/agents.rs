//! The HTTP agents behind [`super::Registry`]: one per registry host and connection
//! settings, shared by the clients made within [`MAX_AGE`] of its making. A mirror makes a
//! client per image and side; sharing the agent lets them reuse its pooled connections (no
//! new TCP connection, no new TLS handshake per image) and its name lookups (a host is looked
//! up once, where ureq alone looks it up, on a thread of its own, before every request).
//!
//! An agent, and a looked-up address, is used for [`MAX_AGE`] at most, so a long-lived process
//! (`serve --poll-interval`) reads certs.d, the trust store and the name service again.

use anyhow::Result;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use ureq::tls::{RootCerts, TlsConfig};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    ConnectProxyConnector, ConnectionDetails, Connector, NextTimeout, RustlsConnector,
    TcpConnector, Transport,
};

/// How long an agent is handed out, and a looked-up address kept.
pub const MAX_AGE: Duration = Duration::from_secs(60);

/// Idle connections kept per host: a mirror runs up to images x layers requests at a time.
const IDLE_PER_HOST: usize = 32;

/// How a side reaches its registries (from its `Connection`): the certificate directory
/// (`--cert-dir`), whether to verify TLS, and the timeout of each step of a request.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Settings<'a> {
    pub cert_dir: Option<&'a Path>,
    pub skip_tls_verify: bool,
    pub timeout: Duration,
}

/// What an agent is made from.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    host: String,
    cert_dir: Option<PathBuf>,
    /// The certs.d directory found for the host, when no `--cert-dir` is given.
    certs_d: Option<PathBuf>,
    skip_tls_verify: bool,
    timeout: Duration,
}

type Agents = Mutex<HashMap<Key, (Instant, ureq::Agent)>>;

/// The agent for `host` (`HOST[:PORT]`) with these settings; made, with its trust read, when
/// there is none younger than [`MAX_AGE`].
pub fn agent(host: &str, conn: &Settings) -> Result<ureq::Agent> {
    static AGENTS: OnceLock<Agents> = OnceLock::new();
    let key = Key {
        host: host.to_string(),
        cert_dir: conn.cert_dir.map(Path::to_path_buf),
        certs_d: match conn.cert_dir {
            Some(_) => None,
            None => super::trust::certs_d(host),
        },
        skip_tls_verify: conn.skip_tls_verify,
        timeout: conn.timeout,
    };
    let agents = AGENTS.get_or_init(Default::default);
    let now = Instant::now();
    {
        let mut map = agents.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, (made, _)| now.duration_since(*made) < MAX_AGE);
        if let Some((_, a)) = map.get(&key) {
            return Ok(a.clone());
        }
    }
    // Made outside the lock: reading a certificate directory may take a while. Two threads
    // may both make one; the second replaces the first, which its users keep.
    let a = make(host, conn)?;
    agents
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, (now, a.clone()));
    Ok(a)
}

fn make(host: &str, conn: &Settings) -> Result<ureq::Agent> {
    let trust = super::trust::trust(host, conn.cert_dir, conn.skip_tls_verify)?;
    // ureq's own chain (a CONNECT proxy, TCP, TLS), with the TLS step's settings made at its
    // first use. The agent's own TLS settings trust nothing: only that step makes TLS.
    let connector =
        ().chain(ConnectProxyConnector::default())
            .chain(TcpConnector::default())
            .chain(LazyTls {
                trust,
                timeout: conn.timeout,
                config: OnceLock::new(),
                inner: RustlsConnector::default(),
            });
    let none = TlsConfig::builder()
        .root_certs(RootCerts::new_with_certs(&[]))
        .build();
    Ok(ureq::Agent::with_parts(
        config(conn.timeout, none),
        connector,
        Lookups::default(),
    ))
}

/// An agent's settings, with these TLS settings.
fn config(timeout: Duration, tls: TlsConfig) -> ureq::config::Config {
    let t = Some(timeout);
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .tls_config(tls)
        .timeout_resolve(t)
        .timeout_connect(t)
        .timeout_send_request(t)
        .timeout_recv_response(t)
        .timeout_per_read(t)
        .max_idle_connections_per_host(IDLE_PER_HOST)
        .max_idle_connections(IDLE_PER_HOST * 4)
        .user_agent(concat!("opreg/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// ureq's rustls step, given the registry's TLS settings ([`super::trust::Trust::config`]),
/// made at its first TLS connection: reading the system trust store takes a while, and a run
/// that speaks only plain HTTP never needs it.
struct LazyTls {
    trust: super::trust::Trust,
    timeout: Duration,
    config: OnceLock<ureq::config::Config>,
    inner: RustlsConnector,
}

impl std::fmt::Debug for LazyTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyTls")
            .field("trust", &self.trust)
            .field("made", &self.config.get().is_some())
            .finish_non_exhaustive()
    }
}

impl<In: Transport> Connector<In> for LazyTls {
    type Out = <RustlsConnector as Connector<In>>::Out;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if !details.needs_tls() {
            return self.inner.connect(details, chained);
        }
        let config = self
            .config
            .get_or_init(|| config(self.timeout, self.trust.config()));
        // The same connection, with the agent-level settings that carry the trust. A request's
        // own TLS settings or buffer sizes would be ignored here: the send path sets neither.
        let with_trust = ConnectionDetails {
            uri: details.uri,
            addrs: details.addrs.clone(),
            config,
            request_level: false,
            resolver: details.resolver,
            now: details.now,
            timeout: details.timeout,
            current_time: details.current_time.clone(),
            run_connector: details.run_connector.clone(),
            register_shutdown: details.register_shutdown.clone(),
        };
        self.inner.connect(&with_trust, chained)
    }
}

/// ureq's lookup (with its timeout), remembered per `HOST:PORT` for [`MAX_AGE`].
#[derive(Debug, Default)]
struct Lookups {
    known: Mutex<HashMap<String, (Instant, ResolvedSocketAddrs)>>,
    inner: DefaultResolver,
}

impl Resolver for Lookups {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let key = match (uri.scheme(), uri.authority()) {
            (Some(s), Some(a)) => DefaultResolver::host_and_port(s, a),
            _ => None,
        };
        let Some(key) = key else {
            return self.inner.resolve(uri, config, timeout);
        };
        let now = Instant::now();
        let known = |k: &str| {
            let map = self.known.lock().unwrap_or_else(|e| e.into_inner());
            map.get(k)
                .filter(|(at, _)| now.duration_since(*at) < MAX_AGE)
                .map(|(_, addrs)| addrs.clone())
        };
        if let Some(addrs) = known(&key) {
            return Ok(addrs);
        }
        let addrs = self.inner.resolve(uri, config, timeout)?;
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, (now, addrs.clone()));
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_agent_per_host_and_settings() {
        let conn = Settings {
            cert_dir: None,
            skip_tls_verify: false,
            timeout: Duration::from_secs(30),
        };
        let a = agent("agents-test.invalid:1", &conn).unwrap();
        let b = agent("agents-test.invalid:1", &conn).unwrap();
        let c = agent("agents-test.invalid:2", &conn).unwrap();
        let insecure = Settings {
            skip_tls_verify: true,
            ..conn.clone()
        };
        let d = agent("agents-test.invalid:1", &insecure).unwrap();
        let same = |x: &ureq::Agent, y: &ureq::Agent| std::ptr::eq(x.config(), y.config());
        assert!(same(&a, &b), "the same host and settings share an agent");
        assert!(!same(&a, &c) && !same(&a, &d));
    }

    #[test]
    fn a_host_is_looked_up_once() {
        let lookups = Lookups::default();
        let uri: ureq::http::Uri = "http://127.0.0.1:5000/v2/".parse().unwrap();
        let config = ureq::config::Config::default();
        let first = lookups
            .resolve(&uri, &config, NextTimeout::default())
            .unwrap();
        assert_eq!(first[0], "127.0.0.1:5000".parse().unwrap());
        assert!(lookups.known.lock().unwrap().contains_key("127.0.0.1:5000"));
    }
}
