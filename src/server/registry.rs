//! `api.Registry` and `api.ExperimentalRegistry`: the RPCs OLM calls, answered from the store.
//!
//! Semantics follow `opm serve` (the FBC querier): error texts, trimmed vs full bundles, the
//! provider rules and ListBundles order. Where upstream leaves a choice to map iteration order,
//! opreg answers deterministically with the entry closest to the channel head. Status codes:
//! NOT_FOUND for missing packages/channels/bundles and INVALID_ARGUMENT for missing required
//! fields, where opm answers UNKNOWN (clients only test for an error).

use super::{clip, State};
use crate::api::{self, experimental_registry_server::ExperimentalRegistry};
use crate::served_api::registry_server::Registry;
use crate::store::query::{Missing, NoDefaultProvider};
use crate::store::Store;
use crate::wire::EncodedBundle;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_stream::{wrappers::ReceiverStream, Stream};
use tonic::{Request, Response, Status};

type Stream_<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[derive(Clone)]
pub struct RegistryService {
    pub state: Arc<State>,
}

fn internal(e: impl std::fmt::Display) -> Status {
    Status::internal(clip(format!("{e:#}")))
}

fn not_found(msg: String) -> Status {
    Status::not_found(clip(msg))
}

fn required(field: &str, value: &str) -> Result<(), Status> {
    if value.is_empty() {
        Err(Status::invalid_argument(format!("{field} is required")))
    } else {
        Ok(())
    }
}

/// Bundles per store query of ListBundles. A page is held whole while it is sent (about 57 KB
/// a bundle on the community catalog, so a page of 64 held 3.6 MB): 16 keep it under 1 MB,
/// for one more indexed seek every 16 bundles.
const LIST_PAGE: usize = 16;

/// Runs a lookup of a few rows on the calling worker thread: for the bundle RPCs this is
/// tens of microseconds, less than handing it to the blocking pool and back costs.
fn inline<T>(store: Store, f: impl FnOnce(&Store) -> anyhow::Result<T>) -> Result<T, Status> {
    f(&store).map_err(internal)
}

/// Runs a store query on the blocking pool.
async fn blocking<T: Send + 'static>(
    store: Store,
    f: impl FnOnce(&Store) -> anyhow::Result<T> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(internal)?
        .map_err(internal)
}

fn iter_stream<T: Send + 'static>(items: Vec<T>) -> Stream_<T> {
    Box::pin(tokio_stream::iter(items.into_iter().map(Ok)))
}

fn missing_bundle(m: Missing, pkg: &str, ch: &str, name: &str) -> Status {
    not_found(match m {
        Missing::Package => format!("package {pkg:?} not found"),
        Missing::Channel => format!("package {pkg:?}, channel {ch:?} not found"),
        Missing::Bundle => format!("package {pkg:?}, channel {ch:?}, bundle {name:?} not found"),
    })
}

fn gvk_required(version: &str, kind: &str) -> Result<(), Status> {
    required("version", version)?;
    required("kind", kind)
}

/// Entries for the provider queries: the entry with its own replaces, plus one per skip that
/// differs from it.
fn expand_skips(
    rows: Vec<crate::store::query::EntryRow>,
    keep_skip: impl Fn(&crate::store::query::EntryRow, &str) -> bool,
) -> Vec<api::ChannelEntry> {
    let mut out = Vec::new();
    for r in rows {
        let entry = |replaces: &str| api::ChannelEntry {
            package_name: r.package.clone(),
            channel_name: r.channel.clone(),
            bundle_name: r.bundle.clone(),
            replaces: replaces.to_string(),
        };
        out.push(entry(&r.replaces));
        for s in r
            .skips
            .iter()
            .filter(|s| **s != r.replaces && keep_skip(&r, s))
        {
            out.push(entry(s));
        }
    }
    out
}

/// Head entries providing a GVK (with their in-channel skips), FBC's "latest" rule.
fn latest_providers(
    s: &Store,
    g: &str,
    v: &str,
    k: &str,
) -> anyhow::Result<Vec<api::ChannelEntry>> {
    let rows: Vec<_> = s
        .providing_entries(g, v, k)?
        .into_iter()
        .filter(|r| r.position == 0)
        .collect();
    let mut out = Vec::new();
    for r in rows {
        let mut kept = std::collections::HashSet::new();
        for sk in &r.skips {
            if s.in_channel(&r.package, &r.channel, sk)? {
                kept.insert(sk.clone());
            }
        }
        out.extend(expand_skips(vec![r], |_, sk| kept.contains(sk)));
    }
    Ok(out)
}

fn no_providers(g: &str, v: &str, k: &str) -> Status {
    not_found(format!(
        "no channel entries found that provide group:{g:?} version:{v:?} kind:{k:?}"
    ))
}

#[tonic::async_trait]
impl Registry for RegistryService {
    type ListPackagesStream = Stream_<api::PackageName>;
    type GetChannelEntriesThatReplaceStream = Stream_<api::ChannelEntry>;
    type GetChannelEntriesThatProvideStream = Stream_<api::ChannelEntry>;
    type GetLatestChannelEntriesThatProvideStream = Stream_<api::ChannelEntry>;
    type ListBundlesStream = Stream_<EncodedBundle>;

    async fn list_packages(
        &self,
        _: Request<api::ListPackageRequest>,
    ) -> Result<Response<Self::ListPackagesStream>, Status> {
        // From the package index, in memory: no query.
        let names = self.state.store()?.list_packages().map_err(internal)?;
        Ok(Response::new(iter_stream(
            names
                .into_iter()
                .map(|name| api::PackageName { name })
                .collect(),
        )))
    }

    async fn get_package(
        &self,
        req: Request<api::GetPackageRequest>,
    ) -> Result<Response<api::Package>, Status> {
        let name = req.into_inner().name;
        required("name", &name)?;
        // From the package index, in memory: no query.
        match self.state.store()?.get_package(&name).map_err(internal)? {
            Some(p) => Ok(Response::new(p)),
            None => Err(not_found(format!("package {name:?} not found"))),
        }
    }

    async fn get_bundle(
        &self,
        req: Request<api::GetBundleRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let r = req.into_inner();
        required("pkgName", &r.pkg_name)?;
        required("channelName", &r.channel_name)?;
        required("csvName", &r.csv_name)?;
        let (p, c, n) = (
            r.pkg_name.clone(),
            r.channel_name.clone(),
            r.csv_name.clone(),
        );
        match inline(self.state.store()?, move |s| s.get_bundle(&p, &c, &n, true))? {
            Ok(b) => Ok(Response::new(b)),
            Err(m) => Err(missing_bundle(m, &r.pkg_name, &r.channel_name, &r.csv_name)),
        }
    }

    async fn get_bundle_for_channel(
        &self,
        req: Request<api::GetBundleInChannelRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let r = req.into_inner();
        required("pkgName", &r.pkg_name)?;
        required("channelName", &r.channel_name)?;
        let (p, c) = (r.pkg_name.clone(), r.channel_name.clone());
        let res = inline(self.state.store()?, move |s| {
            if let Err(m) = s.check_channel(&p, &c)? {
                return Ok(Err(m));
            }
            let head = s.channel_head(&p, &c)?.unwrap_or_default();
            s.get_entry_bundle(&p, &c, &head, true)
        })?;
        res.map(Response::new)
            .map_err(|m| missing_bundle(m, &r.pkg_name, &r.channel_name, ""))
    }

    async fn get_channel_entries_that_replace(
        &self,
        req: Request<api::GetAllReplacementsRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatReplaceStream>, Status> {
        let name = req.into_inner().csv_name;
        required("csvName", &name)?;
        let n = name.clone();
        let entries = blocking(self.state.store()?, move |s| s.entries_that_replace(&n)).await?;
        if entries.is_empty() {
            return Err(not_found(format!(
                "no channel entries found that replace {name}"
            )));
        }
        Ok(Response::new(iter_stream(entries)))
    }

    async fn get_bundle_that_replaces(
        &self,
        req: Request<api::GetReplacementRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let r = req.into_inner();
        required("csvName", &r.csv_name)?;
        required("pkgName", &r.pkg_name)?;
        required("channelName", &r.channel_name)?;
        let (p, c, n) = (
            r.pkg_name.clone(),
            r.channel_name.clone(),
            r.csv_name.clone(),
        );
        let res = inline(self.state.store()?, move |s| {
            if let Err(m) = s.check_channel(&p, &c)? {
                return Ok(Err(m));
            }
            s.replacement_in_channel(&p, &c, &n)
        })?;
        res.map(Response::new).map_err(|m| {
            not_found(match m {
                Missing::Package => format!("package {} not found", r.pkg_name),
                Missing::Channel => format!(
                    "package {:?}, channel {:?} not found",
                    r.pkg_name, r.channel_name
                ),
                Missing::Bundle => format!(
                    "no entry found for package {:?}, channel {:?}",
                    r.pkg_name, r.channel_name
                ),
            })
        })
    }

    async fn get_channel_entries_that_provide(
        &self,
        req: Request<api::GetAllProvidersRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatProvideStream>, Status> {
        let r = req.into_inner();
        gvk_required(&r.version, &r.kind)?;
        let (g, v, k) = (r.group.clone(), r.version.clone(), r.kind.clone());
        let rows = blocking(self.state.store()?, move |s| {
            s.providing_entries(&g, &v, &k)
        })
        .await?;
        let entries = expand_skips(rows, |_, _| true);
        if entries.is_empty() {
            return Err(no_providers(&r.group, &r.version, &r.kind));
        }
        Ok(Response::new(iter_stream(entries)))
    }

    async fn get_latest_channel_entries_that_provide(
        &self,
        req: Request<api::GetLatestProvidersRequest>,
    ) -> Result<Response<Self::GetLatestChannelEntriesThatProvideStream>, Status> {
        let r = req.into_inner();
        gvk_required(&r.version, &r.kind)?;
        let (g, v, k) = (r.group.clone(), r.version.clone(), r.kind.clone());
        let entries = blocking(self.state.store()?, move |s| {
            latest_providers(s, &g, &v, &k)
        })
        .await?;
        if entries.is_empty() {
            return Err(no_providers(&r.group, &r.version, &r.kind));
        }
        Ok(Response::new(iter_stream(entries)))
    }

    async fn get_default_bundle_that_provides(
        &self,
        req: Request<api::GetDefaultProviderRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let r = req.into_inner();
        gvk_required(&r.version, &r.kind)?;
        let res = inline(self.state.store()?, |s| {
            s.default_provider(&r.group, &r.version, &r.kind)
        })?;
        match res {
            Ok(b) => Ok(Response::new(b)),
            Err(NoDefaultProvider::NoHead) => Err(no_providers(&r.group, &r.version, &r.kind)),
            Err(NoDefaultProvider::NotInDefaultChannel) => Err(not_found(format!(
                "no entry found that provides group:{:?} version:{:?} kind:{:?}",
                r.group, r.version, r.kind
            ))),
        }
    }

    async fn list_bundles(
        &self,
        _: Request<api::ListBundlesRequest>,
    ) -> Result<Response<Self::ListBundlesStream>, Status> {
        let store = self.state.store()?;
        // A small buffer gives back-pressure: when the client stops reading, the producer
        // waits on `send` holding no connection and no lock.
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            let mut after = None;
            loop {
                let s = store.clone();
                let a = after.clone();
                let page =
                    tokio::task::spawn_blocking(move || s.list_bundles_page(a.as_ref(), LIST_PAGE))
                        .await;
                let rows = match page {
                    Ok(Ok(rows)) => rows,
                    Ok(Err(e)) => {
                        let _ = tx.send(Err(internal(e))).await;
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(internal(e))).await;
                        return;
                    }
                };
                if rows.is_empty() {
                    return;
                }
                for (key, b) in rows {
                    after = Some(key);
                    if tx.send(Ok(b)).await.is_err() {
                        return; // client went away
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

/// Upstream's pattern for custom schema and package names in the experimental RPC.
fn valid_meta_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

#[tonic::async_trait]
impl ExperimentalRegistry for RegistryService {
    type ExperimentalListPackageCustomSchemasStream = Stream_<prost_types::Struct>;

    async fn experimental_list_package_custom_schemas(
        &self,
        req: Request<api::ExperimentalListPackageCustomSchemasRequest>,
    ) -> Result<Response<Self::ExperimentalListPackageCustomSchemasStream>, Status> {
        let acknowledged = req
            .metadata()
            .get("x-acknowledge-experimental")
            .and_then(|v| v.to_str().ok())
            == Some("true");
        if !acknowledged {
            return Ok(Response::new(iter_stream(Vec::new())));
        }
        let r = req.into_inner();
        if r.schema.is_empty() {
            return Err(Status::invalid_argument("schema is required"));
        }
        const PATTERN: &str = "^[a-zA-Z0-9][a-zA-Z0-9._-]*$";
        if !valid_meta_name(&r.schema) {
            return Err(Status::invalid_argument(clip(format!(
                "invalid custom schema query: invalid schema {:?}: must match {PATTERN}",
                r.schema
            ))));
        }
        if !r.package_name.is_empty() && !valid_meta_name(&r.package_name) {
            return Err(Status::invalid_argument(clip(format!(
                "invalid custom schema query: invalid packageName {:?}: must match {PATTERN}",
                r.package_name
            ))));
        }
        let blobs = blocking(self.state.store()?, move |s| {
            s.custom_metas(&r.schema, &r.package_name)
        })
        .await?;
        let structs = blobs
            .iter()
            .filter_map(|b| serde_json::from_str::<serde_json::Value>(b).ok())
            .filter_map(|v| match json_to_prost(v).kind {
                Some(prost_types::value::Kind::StructValue(s)) => Some(s),
                _ => None,
            })
            .collect();
        Ok(Response::new(iter_stream(structs)))
    }
}

fn json_to_prost(v: serde_json::Value) -> prost_types::Value {
    use prost_types::value::Kind;
    use serde_json::Value as J;
    let kind = match v {
        J::Null => Kind::NullValue(0),
        J::Bool(b) => Kind::BoolValue(b),
        J::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        J::String(s) => Kind::StringValue(s),
        J::Array(a) => Kind::ListValue(prost_types::ListValue {
            values: a.into_iter().map(json_to_prost).collect(),
        }),
        J::Object(m) => Kind::StructValue(prost_types::Struct {
            fields: m.into_iter().map(|(k, v)| (k, json_to_prost(v))).collect(),
        }),
    };
    prost_types::Value { kind: Some(kind) }
}
