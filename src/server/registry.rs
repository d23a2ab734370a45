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
use crate::store::questions::{Answer, NotFound};
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

fn not_found(e: NotFound) -> Status {
    Status::not_found(clip(e.to_string()))
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

/// Asks the store on the calling worker thread: for the bundle RPCs this is tens of
/// microseconds, less than handing it to the blocking pool and back costs.
fn inline<T>(store: Store, ask: impl FnOnce(&Store) -> Answer<T>) -> Result<T, Status> {
    ask(&store).map_err(internal)?.map_err(not_found)
}

/// Asks the store on the blocking pool.
async fn blocking<T: Send + 'static>(
    store: Store,
    ask: impl FnOnce(&Store) -> Answer<T> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(move || ask(&store))
        .await
        .map_err(internal)?
        .map_err(internal)?
        .map_err(not_found)
}

fn iter_stream<T: Send + 'static>(items: Vec<T>) -> Stream_<T> {
    Box::pin(tokio_stream::iter(items.into_iter().map(Ok)))
}

fn gvk_required(version: &str, kind: &str) -> Result<(), Status> {
    required("version", version)?;
    required("kind", kind)
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
        let names = inline(self.state.store()?, |s| Ok(Ok(s.package_names()?)))?;
        let names = names.into_iter().map(|name| api::PackageName { name });
        Ok(Response::new(iter_stream(names.collect())))
    }

    async fn get_package(
        &self,
        req: Request<api::GetPackageRequest>,
    ) -> Result<Response<api::Package>, Status> {
        let r = req.into_inner();
        required("name", &r.name)?;
        // From the package index, in memory: no query.
        inline(self.state.store()?, |s| s.package(&r.name)).map(Response::new)
    }

    async fn get_bundle(
        &self,
        req: Request<api::GetBundleRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let r = req.into_inner();
        required("pkgName", &r.pkg_name)?;
        required("channelName", &r.channel_name)?;
        required("csvName", &r.csv_name)?;
        inline(self.state.store()?, |s| {
            s.bundle(&r.pkg_name, &r.channel_name, &r.csv_name)
        })
        .map(Response::new)
    }

    async fn get_bundle_for_channel(
        &self,
        req: Request<api::GetBundleInChannelRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let r = req.into_inner();
        required("pkgName", &r.pkg_name)?;
        required("channelName", &r.channel_name)?;
        inline(self.state.store()?, |s| {
            s.bundle_for_channel(&r.pkg_name, &r.channel_name)
        })
        .map(Response::new)
    }

    async fn get_channel_entries_that_replace(
        &self,
        req: Request<api::GetAllReplacementsRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatReplaceStream>, Status> {
        let r = req.into_inner();
        required("csvName", &r.csv_name)?;
        let entries = blocking(self.state.store()?, move |s| {
            s.entries_that_replace(&r.csv_name)
        })
        .await?;
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
        inline(self.state.store()?, |s| {
            s.bundle_that_replaces(&r.csv_name, &r.pkg_name, &r.channel_name)
        })
        .map(Response::new)
    }

    async fn get_channel_entries_that_provide(
        &self,
        req: Request<api::GetAllProvidersRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatProvideStream>, Status> {
        let r = req.into_inner();
        gvk_required(&r.version, &r.kind)?;
        let entries = blocking(self.state.store()?, move |s| {
            s.entries_that_provide(&r.group, &r.version, &r.kind)
        })
        .await?;
        Ok(Response::new(iter_stream(entries)))
    }

    async fn get_latest_channel_entries_that_provide(
        &self,
        req: Request<api::GetLatestProvidersRequest>,
    ) -> Result<Response<Self::GetLatestChannelEntriesThatProvideStream>, Status> {
        let r = req.into_inner();
        gvk_required(&r.version, &r.kind)?;
        let entries = blocking(self.state.store()?, move |s| {
            s.latest_entries_that_provide(&r.group, &r.version, &r.kind)
        })
        .await?;
        Ok(Response::new(iter_stream(entries)))
    }

    async fn get_default_bundle_that_provides(
        &self,
        req: Request<api::GetDefaultProviderRequest>,
    ) -> Result<Response<EncodedBundle>, Status> {
        let r = req.into_inner();
        gvk_required(&r.version, &r.kind)?;
        inline(self.state.store()?, |s| {
            s.default_bundle_that_provides(&r.group, &r.version, &r.kind)
        })
        .map(Response::new)
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
            Ok(Ok(s.custom_metas(&r.schema, &r.package_name)?))
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
