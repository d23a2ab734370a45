//! `opreg.v1.Upgrades`: upgrade resolution over the served catalog.

use super::State;
use crate::upgrades_api::{upgrades_server::Upgrades, ResolveRequest, ResolveResponse};
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct UpgradesService {
    pub state: Arc<State>,
}

#[tonic::async_trait]
impl Upgrades for UpgradesService {
    async fn resolve(
        &self,
        _req: Request<ResolveRequest>,
    ) -> Result<Response<ResolveResponse>, Status> {
        let _ = self.state.store()?;
        Err(Status::unimplemented(
            "upgrade resolution is not available yet",
        ))
    }
}
