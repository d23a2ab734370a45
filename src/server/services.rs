//! What this server serves, by name: every service and method of the descriptors it registers
//! (`api.Registry`, `api.ExperimentalRegistry`, `opreg.v1.Upgrades`, `grpc.health.v1.Health`
//! and both reflection services), read once from those descriptors, so the list cannot drift
//! from what is registered.
//!
//! Two things ask: the health service, which answers NOT_FOUND for a service name it does not
//! know (as grpc-go's health server does), and the metrics layer, which labels a call with its
//! method only when the method is served: any other path shares the label `other`, so a client
//! cannot make up label values (as unknown HTTP paths share `route="other"`).

use prost::Message;
use std::collections::HashSet;
use std::sync::OnceLock;

/// The label of every gRPC path that is not a served method.
pub const OTHER: &str = "other";

/// Names a health check may ask about besides the services: `""` (the server as a whole) and
/// `"Registry"`, which operator-registry's client library (`pkg/client`) asks for.
const HEALTH_ALIASES: [&str; 2] = ["", "Registry"];

struct Served {
    /// Fully qualified service names (`api.Registry`).
    services: HashSet<String>,
    /// Request paths of the methods (`/api.Registry/GetBundle`).
    methods: HashSet<String>,
}

fn served() -> &'static Served {
    static SERVED: OnceLock<Served> = OnceLock::new();
    SERVED.get_or_init(|| {
        let mut s = Served {
            services: HashSet::new(),
            methods: HashSet::new(),
        };
        for set in [
            crate::api::FILE_DESCRIPTOR_SET,
            tonic_health::pb::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
        ] {
            let set = prost_types::FileDescriptorSet::decode(set)
                .expect("the embedded descriptor sets decode");
            for file in set.file {
                for svc in &file.service {
                    let name = match file.package() {
                        "" => svc.name().to_string(),
                        p => format!("{p}.{}", svc.name()),
                    };
                    for m in &svc.method {
                        s.methods.insert(format!("/{name}/{}", m.name()));
                    }
                    s.services.insert(name);
                }
            }
        }
        s
    })
}

/// True when a health check for `name` concerns this server: one of its services, or one of
/// the names that mean the server as a whole.
pub fn is_health_service(name: &str) -> bool {
    HEALTH_ALIASES.contains(&name) || served().services.contains(name)
}

/// The metrics label of a request path: the path of a served method, else [`OTHER`].
pub fn method_label(path: &str) -> &'static str {
    served().methods.get(path).map_or(OTHER, String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_methods_and_services_are_known_and_nothing_else() {
        for path in [
            "/api.Registry/GetBundle",
            "/api.Registry/ListBundles",
            "/api.ExperimentalRegistry/ExperimentalListPackageCustomSchemas",
            "/opreg.v1.Upgrades/Resolve",
            "/grpc.health.v1.Health/Check",
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        ] {
            assert_eq!(method_label(path), path);
        }
        for path in ["/api.Registry/Nope", "/api.Registry/getbundle", "/", ""] {
            assert_eq!(method_label(path), OTHER);
        }
        for name in ["", "Registry", "api.Registry", "grpc.health.v1.Health"] {
            assert!(is_health_service(name), "{name}");
        }
        for name in ["nope", "registry", "api.Registry/GetBundle"] {
            assert!(!is_health_service(name), "{name}");
        }
    }
}
