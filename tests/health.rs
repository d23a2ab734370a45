//! gRPC health by service name, as grpc-go's health server answers: SERVING for the server as a
//! whole (`""`, and `Registry`, which operator-registry's client library asks for) and for each
//! served service, NOT_FOUND for any other name; and the health probe (the real binary, as
//! `opreg health-probe`) fails for such a name, as grpc_health_probe does (exit code 3, an RPC
//! failure). The server runs in this process on a free port.

use crate::common;

use common::{opreg, rt, InProcess};
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

const SERVED: [&str; 6] = [
    "",
    "Registry",
    "api.Registry",
    "api.ExperimentalRegistry",
    "opreg.v1.Upgrades",
    "grpc.health.v1.Health",
];
const UNKNOWN: [&str; 3] = ["nope", "registry", "api.Registry/GetBundle"];

#[test]
fn health_knows_the_services_it_serves_and_no_others() {
    let server = InProcess::demo();
    rt().block_on(async {
        let ch = tonic::transport::Endpoint::from_shared(server.addr())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut h = HealthClient::new(ch);
        for service in SERVED {
            let r = h
                .check(HealthCheckRequest {
                    service: service.into(),
                })
                .await
                .unwrap_or_else(|e| panic!("{service:?}: {e}"));
            assert_eq!(r.into_inner().status, 1, "{service:?}: SERVING");
        }
        for service in UNKNOWN {
            let e = h
                .check(HealthCheckRequest {
                    service: service.into(),
                })
                .await
                .expect_err(service);
            assert_eq!(e.code(), tonic::Code::NotFound, "{service:?}");
            assert_eq!(e.message(), "unknown service");
        }
    });
    let addr = format!("127.0.0.1:{}", server.port);
    for service in SERVED {
        let (code, out, err) = opreg(&["health-probe", "--addr", &addr, "--service", service]);
        assert_eq!(code, 0, "{service:?}: {out}{err}");
    }
    for service in UNKNOWN {
        let (code, _, err) = opreg(&["health-probe", "--addr", &addr, "--service", service]);
        assert_eq!(code, 3, "{service:?}: {err}");
        assert!(err.contains("unknown service"), "{err}");
    }
}
