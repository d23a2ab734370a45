//! A gRPC health check client with grpc_health_probe's behaviour (`opreg health-probe`, and the
//! binary installed as `grpc_health_probe`), so OLM's exec probes run unchanged.
//!
//! A check's result is an [`Outcome`], whose text is the line grpc_health_probe prints; the
//! CLI turns it into grpc_health_probe's exit code.

use std::time::Duration;
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

/// What one health check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The status was SERVING.
    Serving,
    /// The address cannot be dialled as given.
    BadAddress(String),
    /// No connection within the connect timeout, or the connection failed.
    NoConnection(String),
    /// The health RPC failed or timed out (or no runtime could be made for it).
    RpcFailed(String),
    /// The server answered with a status other than SERVING.
    Unhealthy(String),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Serving => f.write_str("status: SERVING"),
            Outcome::BadAddress(m)
            | Outcome::NoConnection(m)
            | Outcome::RpcFailed(m)
            | Outcome::Unhealthy(m) => f.write_str(m),
        }
    }
}

/// One health check.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// Address to dial; a bare `:PORT` means this host.
    pub addr: String,
    /// Service name to ask about ("" means the server as a whole).
    pub service: String,
    pub connect_timeout: Duration,
    pub rpc_timeout: Duration,
    pub tls: bool,
    pub tls_ca_cert: Option<std::path::PathBuf>,
    pub tls_no_verify: bool,
    pub tls_server_name: Option<String>,
}

/// Runs one check on a runtime of its own.
pub fn run(a: &ProbeOptions) -> Outcome {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(check(a)),
        Err(e) => Outcome::RpcFailed(format!("error: {e}")),
    }
}

/// Why a connection failed, without tonic's uninformative outer "transport error": the
/// innermost cause, with "connection refused" and DNS failures named as such.
fn connect_failure(e: &(dyn std::error::Error + 'static)) -> String {
    let mut causes = Vec::new();
    let mut cur = Some(e);
    while let Some(c) = cur {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return "connection refused".into();
            }
        }
        causes.push(c.to_string());
        cur = c.source();
    }
    causes.retain(|c| c != "transport error");
    let detail = causes.last().cloned().unwrap_or_else(|| e.to_string());
    if causes.iter().any(|c| c.starts_with("dns error")) {
        format!("DNS lookup failed: {detail}")
    } else {
        detail
    }
}

/// Performs one check.
pub async fn check(a: &ProbeOptions) -> Outcome {
    let addr = if a.addr.starts_with(':') {
        format!("127.0.0.1{}", a.addr)
    } else {
        a.addr.clone()
    };
    let endpoint = match tonic::transport::Endpoint::from_shared(format!("http://{addr}")) {
        Ok(e) => e.connect_timeout(a.connect_timeout),
        Err(e) => return Outcome::BadAddress(format!("error: invalid -addr {:?}: {e}", a.addr)),
    };
    let connect = async {
        if !a.tls {
            return endpoint.connect().await.map_err(anyhow::Error::from);
        }
        let trust = match (&a.tls_ca_cert, a.tls_no_verify) {
            (Some(p), _) => crate::conn::tls::Trust::CaFile("-tls-ca-cert", p),
            (None, true) => crate::conn::tls::Trust::NoVerify,
            (None, false) => crate::conn::tls::Trust::PublicRoots,
        };
        let cfg = crate::conn::tls::client_config(trust)?;
        let host = a.tls_server_name.clone().unwrap_or_else(|| {
            addr.rsplit_once(':')
                .map(|(h, _)| h.trim_matches(|c| c == '[' || c == ']').to_string())
                .unwrap_or_else(|| addr.clone())
        });
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|e| anyhow::anyhow!("invalid server name {host:?}: {e}"))?;
        let target = addr.clone();
        let connector = tower::service_fn(move |_: http::Uri| {
            let (cfg, name, target) = (cfg.clone(), name.clone(), target.clone());
            async move {
                let tcp = tokio::net::TcpStream::connect(target).await?;
                let tls = tokio_rustls::TlsConnector::from(cfg)
                    .connect(name, tcp)
                    .await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tls))
            }
        });
        endpoint
            .connect_with_connector(connector)
            .await
            .map_err(anyhow::Error::from)
    };
    let channel = match tokio::time::timeout(a.connect_timeout, connect).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            return Outcome::NoConnection(format!(
                "error: failed to connect service at {:?}: {}",
                a.addr,
                connect_failure(AsRef::<dyn std::error::Error + Send + Sync>::as_ref(&e))
            ))
        }
        Err(_) => {
            return Outcome::NoConnection(format!(
                "timeout: failed to connect service {:?} within {:?}",
                a.addr, a.connect_timeout
            ))
        }
    };
    let mut client = HealthClient::new(channel);
    let req = HealthCheckRequest {
        service: a.service.clone(),
    };
    match tokio::time::timeout(a.rpc_timeout, client.check(req)).await {
        Err(_) => Outcome::RpcFailed(format!(
            "timeout: health rpc did not complete within {:?}",
            a.rpc_timeout
        )),
        Ok(Err(s)) => Outcome::RpcFailed(format!(
            "error: health rpc failed: {}: {}",
            s.code(),
            s.message()
        )),
        Ok(Ok(resp)) => {
            let status =
                ServingStatus::try_from(resp.into_inner().status).unwrap_or(ServingStatus::Unknown);
            if status == ServingStatus::Serving {
                Outcome::Serving
            } else {
                Outcome::Unhealthy(format!(
                    "service unhealthy (responded with {:?})",
                    status.as_str_name()
                ))
            }
        }
    }
}
