//! The gRPC client side: health polling, ListBundles streaming and closed-loop unary load.

use crate::procs::{self_cpu, Server};
use opreg::api::{self, registry_client::RegistryClient};
use prost::Message;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

pub async fn connect(addr: &str) -> Result<Channel, tonic::transport::Error> {
    Endpoint::from_shared(addr.to_string())
        .expect("valid address")
        .connect()
        .await
}

/// Polls health every millisecond from the server's spawn until SERVING; returns the time from
/// spawn. Fails after `timeout` or when the process dies.
pub async fn wait_serving(server: &mut Server, timeout: Duration) -> Result<Duration, String> {
    let end = server.started + timeout;
    let mut ch: Option<Channel> = None;
    loop {
        if ch.is_none() {
            ch = connect(&server.addr()).await.ok();
        }
        if let Some(c) = &ch {
            match HealthClient::new(c.clone())
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await
            {
                Ok(r) if r.get_ref().status == 1 => return Ok(server.started.elapsed()),
                Ok(_) => {}
                Err(_) => ch = None,
            }
        }
        if Instant::now() > end {
            return Err(format!(
                "no SERVING within {timeout:?}; server log:\n{}",
                server.log_text()
            ));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

pub struct ListStats {
    pub msgs: u64,
    pub bytes: u64,
    pub secs: f64,
    /// Largest server RSS sampled while streaming, KiB.
    pub rss_peak_kb: u64,
}

/// The runtime every client of the harness runs on: one worker thread, so that the client
/// takes at most one of the cores it shares with the server.
pub fn client_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
}

/// Streams the whole ListBundles on a fresh connection, decoding every message.
pub async fn list_bundles(server: &Server) -> ListStats {
    let ch = connect(&server.addr()).await.expect("connect");
    let mut c = RegistryClient::new(ch).max_decoding_message_size(usize::MAX);
    let t = Instant::now();
    let mut s = c
        .list_bundles(api::ListBundlesRequest {})
        .await
        .expect("ListBundles")
        .into_inner();
    let (mut msgs, mut bytes, mut peak) = (0u64, 0u64, server.rss_kb());
    while let Some(b) = s.next().await {
        let b = b.expect("ListBundles message");
        msgs += 1;
        bytes += b.encoded_len() as u64;
        if msgs.is_multiple_of(128) {
            peak = peak.max(server.rss_kb());
        }
    }
    let secs = t.elapsed().as_secs_f64();
    ListStats {
        msgs,
        bytes,
        secs,
        rss_peak_kb: peak.max(server.rss_kb()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rpc {
    /// Health/Check on the same server: the empty-RPC floor.
    Empty,
    GetPackage,
    GetBundleThatReplaces,
    GetBundle,
    GetBundleForChannel,
    GetDefaultBundleThatProvides,
}

impl Rpc {
    pub fn label(self) -> &'static str {
        match self {
            Rpc::Empty => "empty RPC (floor)",
            Rpc::GetPackage => "GetPackage",
            Rpc::GetBundleThatReplaces => "GetBundleThatReplaces",
            Rpc::GetBundle => "GetBundle",
            Rpc::GetBundleForChannel => "GetBundleForChannel",
            Rpc::GetDefaultBundleThatProvides => "GetDefaultBundleThatProvides",
        }
    }
}

/// Request keys, read from the built database.
pub struct Keys {
    pub packages: Vec<String>,
    /// (package, channel, csv) with a bundle that replaces or skips csv in that channel.
    pub replaced: Vec<(String, String, String)>,
    /// (package, channel, bundle) channel entries, for GetBundle.
    pub entries: Vec<(String, String, String)>,
    /// (package, channel), for GetBundleForChannel.
    pub channels: Vec<(String, String)>,
    /// (group, version, kind) with a default provider, for GetDefaultBundleThatProvides.
    pub gvks: Vec<(String, String, String)>,
}

async fn call(rpc: Rpc, ch: &Channel, keys: &Keys, i: usize) -> Result<(), tonic::Status> {
    if let Some(res) = bundle_call(rpc, ch, keys, i).await {
        res?;
        return Ok(());
    }
    match rpc {
        Rpc::Empty => {
            HealthClient::new(ch.clone())
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await?;
        }
        Rpc::GetPackage => {
            let name = keys.packages[i % keys.packages.len()].clone();
            RegistryClient::new(ch.clone())
                .get_package(api::GetPackageRequest { name })
                .await?;
        }
        _ => unreachable!("bundle RPCs are answered by bundle_call"),
    }
    Ok(())
}

/// The `i`th request of a bundle RPC (keys wrap around), or None for the other RPCs.
pub fn bundle_request(rpc: Rpc, keys: &Keys, i: usize) -> Option<BundleRequest> {
    let pick = |v: &Vec<(String, String, String)>| v[i % v.len()].clone();
    Some(match rpc {
        Rpc::GetBundleThatReplaces => {
            let (p, c, n) = pick(&keys.replaced);
            BundleRequest::Replaces(api::GetReplacementRequest {
                csv_name: n,
                pkg_name: p,
                channel_name: c,
            })
        }
        Rpc::GetBundle => {
            let (p, c, n) = pick(&keys.entries);
            BundleRequest::Bundle(api::GetBundleRequest {
                pkg_name: p,
                channel_name: c,
                csv_name: n,
            })
        }
        Rpc::GetBundleForChannel => {
            let (p, c) = keys.channels[i % keys.channels.len()].clone();
            BundleRequest::ForChannel(api::GetBundleInChannelRequest {
                pkg_name: p,
                channel_name: c,
            })
        }
        Rpc::GetDefaultBundleThatProvides => {
            let (group, version, kind) = pick(&keys.gvks);
            BundleRequest::Provides(api::GetDefaultProviderRequest {
                group,
                version,
                kind,
                plural: String::new(),
            })
        }
        Rpc::Empty | Rpc::GetPackage => return None,
    })
}

/// A request of one of the four RPCs that answer with a bundle.
#[derive(Clone)]
pub enum BundleRequest {
    Bundle(api::GetBundleRequest),
    ForChannel(api::GetBundleInChannelRequest),
    Replaces(api::GetReplacementRequest),
    Provides(api::GetDefaultProviderRequest),
}

impl BundleRequest {
    /// The request's fields, as the floor server looks its answer up.
    pub fn key(&self) -> String {
        match self {
            BundleRequest::Bundle(r) => {
                format!("b\n{}\n{}\n{}", r.pkg_name, r.channel_name, r.csv_name)
            }
            BundleRequest::ForChannel(r) => format!("c\n{}\n{}", r.pkg_name, r.channel_name),
            BundleRequest::Replaces(r) => {
                format!("r\n{}\n{}\n{}", r.pkg_name, r.channel_name, r.csv_name)
            }
            BundleRequest::Provides(r) => format!("p\n{}\n{}\n{}", r.group, r.version, r.kind),
        }
    }

    // OLM's catalog operator still calls GetBundleForChannel.
    #[allow(deprecated)]
    pub async fn send(self, ch: &Channel) -> Result<api::Bundle, tonic::Status> {
        let mut c = RegistryClient::new(ch.clone()).max_decoding_message_size(usize::MAX);
        Ok(match self {
            BundleRequest::Bundle(r) => c.get_bundle(r).await?,
            BundleRequest::ForChannel(r) => c.get_bundle_for_channel(r).await?,
            BundleRequest::Replaces(r) => c.get_bundle_that_replaces(r).await?,
            BundleRequest::Provides(r) => c.get_default_bundle_that_provides(r).await?,
        }
        .into_inner())
    }
}

async fn bundle_call(
    rpc: Rpc,
    ch: &Channel,
    keys: &Keys,
    i: usize,
) -> Option<Result<(), tonic::Status>> {
    let req = bundle_request(rpc, keys, i)?;
    Some(req.send(ch).await.map(|_| ()))
}

#[derive(Clone, Copy)]
pub struct LoadStats {
    pub rps: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Server CPU per call, microseconds.
    pub server_cpu_us: f64,
    /// Client (this process) CPU per call, microseconds.
    pub client_cpu_us: f64,
}

/// Connections used for `callers` concurrent callers: one per 8 callers.
pub fn connections_for(callers: usize) -> usize {
    callers.div_ceil(8).max(1)
}

/// Closed loop: `callers` tasks each send one call at a time for `warmup + dur`; calls started
/// in the last `dur` are counted and timed.
pub async fn unary(
    server: &Server,
    rpc: Rpc,
    callers: usize,
    keys: Arc<Keys>,
    warmup: Duration,
    dur: Duration,
) -> LoadStats {
    let mut chans = Vec::new();
    for _ in 0..connections_for(callers) {
        chans.push(connect(&server.addr()).await.expect("connect"));
    }
    let start = Instant::now() + Duration::from_millis(20);
    let measure = start + warmup;
    let end = measure + dur;
    let mut tasks = Vec::new();
    for k in 0..callers {
        let ch = chans[k % chans.len()].clone();
        let keys = keys.clone();
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(start.into()).await;
            let mut lat: Vec<u32> = Vec::new();
            // Callers walk the keys from spread-out offsets.
            let mut i = k.wrapping_mul(7919);
            loop {
                let t = Instant::now();
                if t >= end {
                    break;
                }
                if let Err(e) = call(rpc, &ch, &keys, i).await {
                    panic!("{rpc:?} call {i} failed: {e}");
                }
                if t >= measure {
                    lat.push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
                }
                i += 1;
            }
            lat
        }));
    }
    tokio::time::sleep_until(measure.into()).await;
    let (s0, c0) = (server.cpu(), self_cpu());
    tokio::time::sleep_until(end.into()).await;
    let (s1, c1) = (server.cpu(), self_cpu());
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.expect("caller task"));
    }
    lat.sort_unstable();
    let n = lat.len().max(1);
    let pct = |p: f64| {
        lat.get(((n as f64 * p).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0) as f64
    };
    let calls = lat.len() as u64;
    let per = |d: Duration| d.as_secs_f64() * 1e6 / calls.max(1) as f64;
    LoadStats {
        rps: calls as f64 / dur.as_secs_f64(),
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        server_cpu_us: per(s1.saturating_sub(s0)),
        client_cpu_us: per(c1.saturating_sub(c0)),
    }
}
