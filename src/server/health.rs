//! `grpc.health.v1.Health`: for the server as a whole (`""`, or `"Registry"` as
//! operator-registry's client asks) and for each service it serves, SERVING once the catalog
//! is loaded and NOT_SERVING before; NOT_FOUND for any other name, as grpc-go's health server
//! answers (opm's own answers SERVING for every name). `Watch` is not implemented, as in opm.

use super::State;
use std::sync::Arc;
use tonic::{Request, Response, Status};
use tonic_health::pb::{
    health_check_response::ServingStatus, health_server::Health, HealthCheckRequest,
    HealthCheckResponse,
};

pub struct HealthService {
    pub state: Arc<State>,
}

#[tonic::async_trait]
impl Health for HealthService {
    async fn check(
        &self,
        req: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        if !super::services::is_health_service(&req.get_ref().service) {
            return Err(Status::not_found("unknown service"));
        }
        let status = if self.state.is_loaded() {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        };
        Ok(Response::new(HealthCheckResponse {
            status: status as i32,
        }))
    }

    type WatchStream = tokio_stream::Empty<Result<HealthCheckResponse, Status>>;

    async fn watch(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("method Watch not implemented"))
    }
}
