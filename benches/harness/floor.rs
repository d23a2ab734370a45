//! The same-bytes floor for the bundle RPCs (issue 17).
//!
//! GetBundle, GetBundleForChannel, GetBundleThatReplaces and GetDefaultBundleThatProvides are
//! measured twice on the same keys, with the same client, callers and connections: against
//! `opreg serve`, and against a floor server that answers every request with the bytes opreg
//! answered it with, taken beforehand and held in memory. The floor is this harness binary run
//! as `floor-serve` in a process of its own (so its CPU is measured as opreg's is), with the
//! same generated service code and codec opreg serves through, the default worker threads, and
//! a map lookup in place of the store.

use crate::load::{self, bundle_request, Keys, LoadStats, Rpc};
use crate::procs::{free_port, Server};
use opreg::api;
use opreg::served_api::registry_server::{Registry, RegistryServer};
use opreg::wire::EncodedBundle;
use prost::Message;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tonic::{Request, Response, Status};

/// The RPCs measured against the floor.
pub const RPCS: [Rpc; 4] = [
    Rpc::GetBundle,
    Rpc::GetBundleForChannel,
    Rpc::GetBundleThatReplaces,
    Rpc::GetDefaultBundleThatProvides,
];

/// At most this many keys per RPC (the floor holds every answer in memory).
const MAX_KEYS: usize = 1024;

/// Keys for GetBundle, GetBundleForChannel and GetDefaultBundleThatProvides, read from the
/// built database: a deterministic spread of channel entries, every channel, and every
/// provided API.
pub fn read_bundle_keys(c: &rusqlite::Connection, keys: &mut Keys) {
    let spread = |all: Vec<(String, String, String)>| -> Vec<(String, String, String)> {
        let step = all.len().div_ceil(MAX_KEYS).max(1);
        all.into_iter().step_by(step).collect()
    };
    let triples = |sql: &str| -> Vec<(String, String, String)> {
        c.prepare(sql)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    keys.entries = spread(triples(
        "SELECT package, channel, bundle FROM channel_entry ORDER BY package, channel, bundle",
    ));
    keys.gvks = spread(triples(
        "SELECT DISTINCT api_group, version, kind FROM provided_api ORDER BY 1, 2, 3",
    ));
    let channels: Vec<(String, String)> = c
        .prepare("SELECT package, name FROM channel ORDER BY package, name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let step = channels.len().div_ceil(MAX_KEYS).max(1);
    keys.channels = channels.into_iter().step_by(step).collect();
}

/// Asks `server` every key of every RPC in [`RPCS`] once, keeps the keys it answers (an RPC
/// may have no answer for some keys, e.g. an API whose latest provider is not in a default
/// channel), and writes the answers to `answers` for the floor.
fn collect(
    rt: &tokio::runtime::Runtime,
    server: &Server,
    keys: &Keys,
    answers: &Path,
) -> (Keys, u64) {
    let mut kept = Keys {
        packages: keys.packages.clone(),
        replaced: Vec::new(),
        entries: Vec::new(),
        channels: Vec::new(),
        gvks: Vec::new(),
    };
    let mut out = std::io::BufWriter::new(std::fs::File::create(answers).expect("answers file"));
    let mut bytes = 0u64;
    rt.block_on(async {
        let ch = load::connect(&server.addr()).await.expect("connect");
        for rpc in RPCS {
            let n = match rpc {
                Rpc::GetBundle => keys.entries.len(),
                Rpc::GetBundleForChannel => keys.channels.len(),
                Rpc::GetBundleThatReplaces => keys.replaced.len(),
                _ => keys.gvks.len(),
            };
            for i in 0..n {
                let req = bundle_request(rpc, keys, i).expect("a bundle RPC");
                let Ok(b) = req.clone().send(&ch).await else {
                    continue;
                };
                let body = b.encode_to_vec();
                bytes += body.len() as u64;
                let key = req.key();
                for part in [key.as_bytes(), &body] {
                    out.write_all(&(part.len() as u64).to_le_bytes()).unwrap();
                    out.write_all(part).unwrap();
                }
                match rpc {
                    Rpc::GetBundle => kept.entries.push(keys.entries[i].clone()),
                    Rpc::GetBundleForChannel => kept.channels.push(keys.channels[i].clone()),
                    Rpc::GetBundleThatReplaces => kept.replaced.push(keys.replaced[i].clone()),
                    _ => kept.gvks.push(keys.gvks[i].clone()),
                }
            }
        }
    });
    out.flush().expect("write answers");
    (kept, bytes)
}

/// `floor-serve`: serves the answers in FILE on PORT until killed.
pub fn serve(answers: &Path, port: u16) {
    let mut data = Vec::new();
    std::fs::File::open(answers)
        .and_then(|mut f| f.read_to_end(&mut data))
        .expect("read answers");
    let mut map = HashMap::new();
    let mut rest = data.as_slice();
    let take = |rest: &mut &[u8]| -> Vec<u8> {
        let (n, r) = rest.split_at(8);
        let n = u64::from_le_bytes(n.try_into().unwrap()) as usize;
        let (v, r) = r.split_at(n);
        *rest = r;
        v.to_vec()
    };
    while !rest.is_empty() {
        let key = String::from_utf8(take(&mut rest)).expect("UTF-8 key");
        let body = take(&mut rest);
        map.insert(key, EncodedBundle::from_bytes(body.into()));
    }
    let floor = Floor {
        answers: Arc::new(map),
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async move {
            let (reporter, health) = tonic_health::server::health_reporter();
            reporter
                .set_service_status("", tonic_health::ServingStatus::Serving)
                .await;
            // As opreg's server: TCP_NODELAY, the same stream limit.
            tonic::transport::Server::builder()
                .tcp_nodelay(true)
                .max_concurrent_streams(Some(10_000))
                .add_service(health)
                .add_service(RegistryServer::new(floor).max_encoding_message_size(usize::MAX))
                .serve(([127, 0, 0, 1], port).into())
                .await
                .expect("floor server");
        });
}

#[derive(Clone)]
struct Floor {
    answers: Arc<HashMap<String, EncodedBundle>>,
}

impl Floor {
    fn answer(&self, key: String) -> Result<Response<EncodedBundle>, Status> {
        match self.answers.get(&key) {
            Some(b) => Ok(Response::new(b.clone())),
            None => Err(Status::not_found(key)),
        }
    }
}

type Never<T> = Pin<Box<dyn tokio_stream::Stream<Item = Result<T, Status>> + Send + 'static>>;

fn not_measured<T>() -> Result<T, Status> {
    Err(Status::unimplemented("not part of the floor"))
}

#[tonic::async_trait]
impl Registry for Floor {
    type ListPackagesStream = Never<api::PackageName>;
    type GetChannelEntriesThatReplaceStream = Never<api::ChannelEntry>;
    type GetChannelEntriesThatProvideStream = Never<api::ChannelEntry>;
    type GetLatestChannelEntriesThatProvideStream = Never<api::ChannelEntry>;
    type ListBundlesStream = Never<EncodedBundle>;

    async fn list_packages(
        &self,
        _: Request<api::ListPackageRequest>,
    ) -> Result<Response<Self::ListPackagesStream>, Status> {
        not_measured()
    }
    async fn get_package(
        &self,
        _: Request<api::GetPackageRequest>,
    ) -> Result<Response<api::Package>, Status> {
        not_measured()
    }
    async fn get_bundle(
        &self,
        r: Request<api::GetBundleRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        self.answer(load::BundleRequest::Bundle(r.into_inner()).key())
    }
    async fn get_bundle_for_channel(
        &self,
        r: Request<api::GetBundleInChannelRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        self.answer(load::BundleRequest::ForChannel(r.into_inner()).key())
    }
    async fn get_channel_entries_that_replace(
        &self,
        _: Request<api::GetAllReplacementsRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatReplaceStream>, Status> {
        not_measured()
    }
    async fn get_bundle_that_replaces(
        &self,
        r: Request<api::GetReplacementRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        self.answer(load::BundleRequest::Replaces(r.into_inner()).key())
    }
    async fn get_channel_entries_that_provide(
        &self,
        _: Request<api::GetAllProvidersRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatProvideStream>, Status> {
        not_measured()
    }
    async fn get_latest_channel_entries_that_provide(
        &self,
        _: Request<api::GetLatestProvidersRequest>,
    ) -> Result<Response<Self::GetLatestChannelEntriesThatProvideStream>, Status> {
        not_measured()
    }
    async fn get_default_bundle_that_provides(
        &self,
        r: Request<api::GetDefaultProviderRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        self.answer(load::BundleRequest::Provides(r.into_inner()).key())
    }
    async fn list_bundles(
        &self,
        _: Request<api::ListBundlesRequest>,
    ) -> Result<Response<Self::ListBundlesStream>, Status> {
        not_measured()
    }
}

/// Runs of each side per RPC and caller count, alternately. Back-to-back runs of one side moved
/// by up to 20 % on this machine (the host's load, not the code's), more than the target's
/// margin; each side's fastest of three is its figure, so that a slow stretch falling on one
/// side's only good chance does not decide the ratio.
const ROUNDS: usize = 3;

/// One RPC at one caller count, against opreg and against the floor.
pub struct FloorRow {
    pub rpc: Rpc,
    pub callers: usize,
    pub keys: usize,
    pub opreg: LoadStats,
    pub floor: LoadStats,
}

/// The bundle RPCs against `server` (opreg, serving `db`) and against the floor.
pub fn measure(
    rt: &tokio::runtime::Runtime,
    server: &Server,
    keys: &Keys,
    work: &Path,
    warmup: Duration,
    dur: Duration,
) -> Result<(Vec<FloorRow>, f64), String> {
    let answers = work.join("floor-answers.bin");
    let (kept, bytes) = collect(rt, server, keys, &answers);
    let kept = Arc::new(kept);
    let port = free_port();
    let mut cmd = std::process::Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
    cmd.arg("floor-serve")
        .arg(&answers)
        .args(["--port", &port.to_string()]);
    let mut floor = Server::spawn_command(cmd, port, &work.join("floor.log"));
    rt.block_on(load::wait_serving(&mut floor, Duration::from_secs(120)))?;
    let mut rows = Vec::new();
    for rpc in RPCS {
        let n = match rpc {
            Rpc::GetBundle => kept.entries.len(),
            Rpc::GetBundleForChannel => kept.channels.len(),
            Rpc::GetBundleThatReplaces => kept.replaced.len(),
            _ => kept.gvks.len(),
        };
        if n == 0 {
            continue;
        }
        for callers in [1, 64] {
            let run =
                |s: &Server| rt.block_on(load::unary(s, rpc, callers, kept.clone(), warmup, dur));
            // opreg, floor, opreg, floor, ...: each side's fastest run counts.
            let best = |a: LoadStats, b: LoadStats| if a.rps >= b.rps { a } else { b };
            let (mut opreg, mut fl) = (run(server), run(&floor));
            for _ in 1..ROUNDS {
                opreg = best(opreg, run(server));
                fl = best(fl, run(&floor));
            }
            let row = FloorRow {
                rpc,
                callers,
                keys: n,
                opreg,
                floor: fl,
            };
            eprintln!(
                "harness: {} ×{callers}: opreg {:.0}/s {:.0} µs CPU/call (client {:.0}), floor {:.0}/s {:.0} µs (client {:.0})",
                rpc.label(),
                row.opreg.rps,
                row.opreg.server_cpu_us,
                row.opreg.client_cpu_us,
                row.floor.rps,
                row.floor.server_cpu_us,
                row.floor.client_cpu_us
            );
            rows.push(row);
        }
    }
    let _ = std::fs::remove_file(&answers);
    let total: usize =
        kept.entries.len() + kept.channels.len() + kept.replaced.len() + kept.gvks.len();
    Ok((rows, bytes as f64 / total.max(1) as f64))
}

/// The report's section: per RPC and caller count, opreg beside the floor, with the targets
/// at 64 callers (server CPU per call ≤ 1.5 × the floor's, calls/s ≥ 0.8 × the floor's).
pub fn section(w: &mut String, name: &str, res: &Result<(Vec<FloorRow>, f64), String>) {
    use std::fmt::Write as _;
    let _ = writeln!(w, "\n## Bundle RPCs against the same-bytes floor\n\n**{name}**. Floor: a second process (`harness floor-serve`) answering each request with the bytes opreg answered it with, held in memory, through the same generated service code and codec; same client, callers, connections and keys (up to {MAX_KEYS} per RPC, the ones opreg answers), each side run {ROUNDS} times alternately, the fastest run counts. Targets at 64 callers: server CPU per call ≤ 1.5 × the floor's, calls/s ≥ 0.8 × the floor's.\n");
    let (rows, mean) = match res {
        Err(e) => {
            let _ = writeln!(w, "Not measured: {e}");
            return;
        }
        Ok(r) => r,
    };
    let _ = writeln!(w, "Mean answer: {:.1} KB.\n", mean / 1024.0);
    let _ = writeln!(w, "| RPC | keys | callers | opreg calls/s | floor calls/s | ÷ floor | opreg CPU µs/call | floor CPU µs/call | × floor | p99 opreg / floor (ms) | met |");
    let _ = writeln!(w, "|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let tput = r.opreg.rps / r.floor.rps.max(1e-9);
        let cpu = r.opreg.server_cpu_us / r.floor.server_cpu_us.max(1e-9);
        let met = match r.callers {
            64 if tput >= 0.8 && cpu <= 1.5 => "yes",
            64 => "**no**",
            _ => "",
        };
        let _ = writeln!(
            w,
            "| {} | {} | {} | {:.0} | {:.0} | {tput:.2}× | {:.0} | {:.0} | {cpu:.2}× | {:.2} / {:.2} | {met} |",
            r.rpc.label(),
            r.keys,
            r.callers,
            r.opreg.rps,
            r.floor.rps,
            r.opreg.server_cpu_us,
            r.floor.server_cpu_us,
            r.opreg.p99_us / 1e3,
            r.floor.p99_us / 1e3,
        );
    }
}

/// The `floor` subcommand: only this section, against `opreg serve DB`, printed as Markdown.
pub fn alone(db: &Path, duration: f64, work: &Path) {
    let _ = std::fs::create_dir_all(work);
    let rt = load::client_runtime().expect("client runtime");
    let mut s = Server::spawn(
        &crate::procs::opreg_bin(),
        db,
        None,
        &work.join("serve.log"),
    );
    rt.block_on(load::wait_serving(&mut s, Duration::from_secs(60)))
        .unwrap_or_else(|e| panic!("{e}"));
    s.wait_log("integrity check passed", Duration::from_secs(120));
    let keys = Arc::new(crate::measure::read_keys(db));
    let dur = Duration::from_secs_f64(duration);
    let res = measure(&rt, &s, &keys, work, Duration::from_millis(300), dur);
    let mut report = String::new();
    section(&mut report, &db.to_string_lossy(), &res);
    print!("{report}");
}
