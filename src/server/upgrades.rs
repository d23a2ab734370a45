//! `opreg.v1.Upgrades`: upgrade resolution over the served catalog.
//!
//! `Resolve` runs [`crate::graph::resolve::resolve`] on the store's [`UpgradeGraph`]
//! implementation, on the blocking pool, so it gives the CLI's answer for the same catalog.
//! Unknown package/channel/FROM ⇒ NOT_FOUND; a bad request or an unresolvable channel ⇒
//! INVALID_ARGUMENT; a store failure ⇒ INTERNAL. A resolution that finds no upgrade, or ends
//! in an OLM error, is a normal response (`next` absent, `error` set).

use super::State;
use crate::graph::resolve::{
    self, Policy, Rejection, Request, Resolution, ResolveError, Semantics, Step,
};
use crate::upgrades_api::{self as pb, upgrades_server::Upgrades, ResolveRequest, ResolveResponse};
use std::sync::Arc;
use tonic::{Request as GrpcRequest, Response, Status};

pub struct UpgradesService {
    pub state: Arc<State>,
}

#[tonic::async_trait]
impl Upgrades for UpgradesService {
    async fn resolve(
        &self,
        req: GrpcRequest<ResolveRequest>,
    ) -> Result<Response<ResolveResponse>, Status> {
        let store = self.state.store()?;
        let r = req.into_inner();
        let opt = |s: String| (!s.trim().is_empty()).then_some(s);
        let request = Request {
            semantics: match r.semantics() {
                pb::Semantics::Classic => Semantics::Classic,
                pb::Semantics::V1 => Semantics::V1,
                pb::Semantics::Semver => Semantics::Semver,
            },
            policy: match r.policy() {
                pb::Policy::CatalogProvided => Policy::CatalogProvided,
                pb::Policy::SelfCertified => Policy::SelfCertified,
            },
            package: r.package,
            from: r.from,
            channels: r.channels,
            version_range: opt(r.version_range),
            openshift_version: opt(r.openshift_version),
        };
        let res = tokio::task::spawn_blocking(move || resolve::resolve(&store, &request))
            .await
            .map_err(|e| Status::internal(format!("resolution panicked: {e}")))?
            .map_err(status)?;
        Ok(Response::new(to_proto(res)))
    }
}

fn status(e: ResolveError) -> Status {
    match e {
        ResolveError::NotFound(m) => Status::not_found(super::clip(m)),
        ResolveError::Invalid(m) | ResolveError::Usage(m) => {
            Status::invalid_argument(super::clip(m))
        }
        ResolveError::Graph(e) => Status::internal(super::clip(format!("{e:#}"))),
    }
}

fn step(s: Step) -> pb::Step {
    pb::Step {
        name: s.name,
        version: s.version,
        channel: s.channel,
        edge: s.edge,
        from: s.from,
        max_openshift_version: s.max_openshift_version,
        blocks_openshift_upgrade: s.blocks_openshift_upgrade,
        openshift_note: s.openshift_note,
    }
}

/// The wire form of a resolution.
pub fn to_proto(r: Resolution) -> ResolveResponse {
    ResolveResponse {
        next: r.next.map(step),
        path: r.path.into_iter().map(step).collect(),
        rejected: r
            .rejected
            .into_iter()
            .map(|x: Rejection| pb::Rejection {
                name: x.name,
                reason: x.reason,
                detail: x.detail,
                version: x.version,
            })
            .collect(),
        error: r.error.unwrap_or_default(),
        installed: r.installed.name,
        installed_version: r.installed.version.to_string(),
    }
}
