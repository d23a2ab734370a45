//! Hostile requests against the real binary serving the real community catalog: malformed
//! HTTP/2, gRPC framing and codec abuse each get a clean status, and the server keeps serving.
//! Runs under the stress tests' lock (`stress::serial`).

#![allow(deprecated)] // GetBundleForChannel is deprecated in the proto, and still used by OLM.

use super::stress::{
    community_server, connect, drain, health_status, registry, serial, Health, COMMUNITY_PACKAGES,
};
use crate::common;
use common::*;
use opreg::api;
use std::time::Duration;
use tonic::Code;

// ---------------------------------------------------------------------------------------------
// Raw requests: arbitrary message bytes on any path, through tonic's framing.

mod raw {
    use prost::bytes::{Buf, BufMut};
    use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
    use tonic::Status;

    #[derive(Clone, Copy, Default)]
    pub struct Raw;
    pub struct Enc;
    pub struct Dec;

    impl Encoder for Enc {
        type Item = Vec<u8>;
        type Error = Status;
        fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
            dst.put_slice(&item);
            Ok(())
        }
    }

    impl Decoder for Dec {
        type Item = Vec<u8>;
        type Error = Status;
        fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
            let mut v = vec![0; src.remaining()];
            src.copy_to_slice(&mut v);
            Ok(Some(v))
        }
    }

    impl Codec for Raw {
        type Encode = Vec<u8>;
        type Decode = Vec<u8>;
        type Encoder = Enc;
        type Decoder = Dec;
        fn encoder(&mut self) -> Enc {
            Enc
        }
        fn decoder(&mut self) -> Dec {
            Dec
        }
    }

    /// A unary call with `body` as the request message, on `path` (`/pkg.Service/Method`).
    pub async fn unary(
        ch: tonic::transport::Channel,
        path: &str,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, Status> {
        let mut g = tonic::client::Grpc::new(ch).max_decoding_message_size(64 << 20);
        g.ready()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let path = tonic::codegen::http::uri::PathAndQuery::try_from(path).unwrap();
        g.unary(tonic::Request::new(body), path, Raw)
            .await
            .map(|r| r.into_inner())
    }

    /// A server-streaming call; returns the number of messages read to the end.
    pub async fn streaming(
        ch: tonic::transport::Channel,
        path: &str,
        body: Vec<u8>,
    ) -> Result<usize, Status> {
        use tokio_stream::StreamExt;
        let mut g = tonic::client::Grpc::new(ch).max_decoding_message_size(64 << 20);
        g.ready()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let path = tonic::codegen::http::uri::PathAndQuery::try_from(path).unwrap();
        let mut s = g
            .server_streaming(tonic::Request::new(body), path, Raw)
            .await?
            .into_inner();
        let mut n = 0;
        while let Some(m) = s.next().await {
            m?;
            n += 1;
        }
        Ok(n)
    }

    /// Protobuf length-delimited field `field` carrying `bytes` (any bytes, UTF-8 or not).
    pub fn field(field: u32, bytes: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        varint(&mut v, u64::from(field << 3 | 2));
        varint(&mut v, bytes.len() as u64);
        v.extend_from_slice(bytes);
        v
    }

    pub fn varint(v: &mut Vec<u8>, mut x: u64) {
        while x >= 0x80 {
            v.push((x as u8) | 0x80);
            x >>= 7;
        }
        v.push(x as u8);
    }
}

// ---------------------------------------------------------------------------------------------
// Hostile requests.

/// Codes a hostile request may get. INTERNAL is allowed only as the protobuf codec's own
/// status for bytes it cannot parse (tonic-prost, like grpc-go and grpc-java, answers an
/// unparsable request message with INTERNAL before any opreg code runs); every status that
/// opreg itself produces must be one of the others.
fn assert_clean(what: &str, r: &Result<impl std::fmt::Debug, tonic::Status>, allowed: &[Code]) {
    match r {
        Ok(v) => panic!("{what}: expected one of {allowed:?}, got a response {v:?}"),
        Err(s) => assert!(
            allowed.contains(&s.code()),
            "{what}: expected one of {allowed:?}, got {:?}: {}",
            s.code(),
            s.message()
        ),
    }
}

fn assert_codec_rejection(what: &str, r: &Result<Vec<u8>, tonic::Status>) {
    match r {
        Ok(v) => panic!("{what}: garbage was accepted, response {} bytes", v.len()),
        Err(s) => assert!(
            s.code() == Code::Internal && s.message().contains("failed to decode Protobuf message"),
            "{what}: expected the codec's decode error, got {:?}: {}",
            s.code(),
            s.message()
        ),
    }
}

/// grpcurl with `stdin` as the request (`-d @`); (exit code, stdout + stderr).
fn grpcurl_run(args: &[&str], stdin: &str) -> (i32, String) {
    let (code, out, err) = grpcurl_with(args, stdin);
    (code, out + &err)
}

fn grpcurl_checks(port: u16) {
    let addr = format!("127.0.0.1:{port}");
    // grpcurl exits 64 + the status code when the call fails.
    let (code, out) = grpcurl_run(
        &["-plaintext", "-d", "@", &addr, "api.Registry/GetPackage"],
        r#"{"name": ""}"#,
    );
    assert_eq!(code, 64 + Code::InvalidArgument as i32, "{out}");
    assert!(out.contains("InvalidArgument"), "{out}");
    let long = format!(r#"{{"name": "{}"}}"#, "n".repeat(1 << 20));
    let (code, out) = grpcurl_run(
        &["-plaintext", "-d", "@", &addr, "api.Registry/GetPackage"],
        &long,
    );
    assert_eq!(
        code,
        64 + Code::NotFound as i32,
        "{}",
        &out[..out.len().min(2000)]
    );
    assert!(out.len() < 4096, "the error echoed {} bytes", out.len());

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("fake.proto"),
        "syntax = \"proto3\";\npackage api;\nmessage Nothing {}\nservice Registry { rpc NoSuchMethod(Nothing) returns (Nothing); }\n",
    )
    .unwrap();
    let (code, out) = grpcurl_run(
        &[
            "-plaintext",
            "-import-path",
            dir.path().to_str().unwrap(),
            "-proto",
            "fake.proto",
            "-d",
            "@",
            &addr,
            "api.Registry/NoSuchMethod",
        ],
        "{}",
    );
    assert_eq!(code, 64 + Code::Unimplemented as i32, "{out}");
    assert!(out.contains("Unimplemented"), "{out}");
}

#[test]
fn hostile_requests_get_clean_statuses_and_the_server_keeps_serving() {
    let _turn = serial();
    let mut server = community_server(&[]);
    let rt = rt();
    rt.block_on(async {
        let ch = connect(&server).await;
        let mut c = registry(ch.clone());
        use Code::*;

        // Empty required fields.
        assert_clean(
            "GetPackage{}",
            &c.get_package(api::GetPackageRequest::default()).await,
            &[InvalidArgument],
        );
        assert_clean(
            "GetBundle{}",
            &c.get_bundle(api::GetBundleRequest::default()).await,
            &[InvalidArgument],
        );
        assert_clean(
            "GetBundleForChannel{}",
            &c.get_bundle_for_channel(api::GetBundleInChannelRequest::default())
                .await,
            &[InvalidArgument],
        );
        assert_clean(
            "GetBundleThatReplaces{}",
            &c.get_bundle_that_replaces(api::GetReplacementRequest::default())
                .await,
            &[InvalidArgument],
        );
        assert_clean(
            "GetChannelEntriesThatReplace{}",
            &c.get_channel_entries_that_replace(api::GetAllReplacementsRequest::default())
                .await
                .map(|_| ()),
            &[InvalidArgument],
        );
        assert_clean(
            "GetChannelEntriesThatProvide{}",
            &c.get_channel_entries_that_provide(api::GetAllProvidersRequest::default())
                .await
                .map(|_| ()),
            &[InvalidArgument],
        );
        assert_clean(
            "GetLatestChannelEntriesThatProvide{}",
            &c.get_latest_channel_entries_that_provide(api::GetLatestProvidersRequest::default())
                .await
                .map(|_| ()),
            &[InvalidArgument],
        );
        assert_clean(
            "GetDefaultBundleThatProvides{}",
            &c.get_default_bundle_that_provides(api::GetDefaultProviderRequest::default())
                .await,
            &[InvalidArgument],
        );
        let mut exp =
            api::experimental_registry_client::ExperimentalRegistryClient::new(ch.clone());
        let mut req =
            tonic::Request::new(api::ExperimentalListPackageCustomSchemasRequest::default());
        req.metadata_mut()
            .insert("x-acknowledge-experimental", "true".parse().unwrap());
        assert_clean(
            "ExperimentalListPackageCustomSchemas{}",
            &exp.experimental_list_package_custom_schemas(req)
                .await
                .map(|_| ()),
            &[InvalidArgument],
        );
        let mut up = opreg::upgrades_api::upgrades_client::UpgradesClient::new(ch.clone());
        assert_clean(
            "Resolve{}",
            &up.resolve(opreg::upgrades_api::ResolveRequest::default())
                .await,
            &[InvalidArgument, NotFound],
        );
        // Empty requests where nothing is required still answer.
        let (n, end) = drain(
            &mut c
                .list_packages(api::ListPackageRequest {})
                .await
                .unwrap()
                .into_inner(),
        )
        .await;
        end.unwrap();
        assert_eq!(n, COMMUNITY_PACKAGES);

        // 1 MB strings: well-formed, just absurd.
        let mb = "a".repeat(1 << 20);
        assert_clean(
            "GetPackage{1 MB name}",
            &c.get_package(api::GetPackageRequest { name: mb.clone() })
                .await,
            &[NotFound],
        );
        assert_clean(
            "GetBundle{3 × 1 MB}",
            &c.get_bundle(api::GetBundleRequest {
                pkg_name: mb.clone(),
                channel_name: mb.clone(),
                csv_name: mb.clone(),
            })
            .await,
            &[NotFound],
        );
        assert_clean(
            "GetBundleThatReplaces{3 × 1 MB}",
            &c.get_bundle_that_replaces(api::GetReplacementRequest {
                csv_name: mb.clone(),
                pkg_name: mb.clone(),
                channel_name: mb.clone(),
            })
            .await,
            &[NotFound],
        );
        assert_clean(
            "GetChannelEntriesThatReplace{1 MB}",
            &c.get_channel_entries_that_replace(api::GetAllReplacementsRequest {
                csv_name: mb.clone(),
            })
            .await
            .map(|_| ()),
            &[NotFound],
        );
        assert_clean(
            "GetChannelEntriesThatProvide{1 MB}",
            &c.get_channel_entries_that_provide(api::GetAllProvidersRequest {
                group: mb.clone(),
                version: mb.clone(),
                kind: mb.clone(),
                plural: String::new(),
            })
            .await
            .map(|_| ()),
            &[NotFound],
        );
        assert_clean(
            "GetDefaultBundleThatProvides{1 MB}",
            &c.get_default_bundle_that_provides(api::GetDefaultProviderRequest {
                group: mb.clone(),
                version: mb.clone(),
                kind: mb.clone(),
                plural: String::new(),
            })
            .await,
            &[NotFound],
        );
        assert_clean(
            "Resolve{1 MB}",
            &up.resolve(opreg::upgrades_api::ResolveRequest {
                package: mb.clone(),
                from: mb.clone(),
                channels: vec![mb.clone()],
                ..Default::default()
            })
            .await,
            &[InvalidArgument, NotFound],
        );

        // Bigger than the 4 MiB default decoding limit: the codec refuses it before opreg
        // sees it. gRPC's table says RESOURCE_EXHAUSTED; tonic answers OUT_OF_RANGE.
        let big = "b".repeat(5 << 20);
        assert_clean(
            "GetPackage{5 MB name}",
            &c.get_package(api::GetPackageRequest { name: big.clone() })
                .await,
            &[ResourceExhausted, OutOfRange],
        );
        assert_clean(
            "GetBundle{3 × 1.5 MB}",
            &c.get_bundle(api::GetBundleRequest {
                pkg_name: big[..3 << 19].to_string(),
                channel_name: big[..3 << 19].to_string(),
                csv_name: big[..3 << 19].to_string(),
            })
            .await,
            &[ResourceExhausted, OutOfRange],
        );

        // Invalid UTF-8 in string fields, and bytes that are not protobuf at all.
        let bad_utf8 = raw::field(1, b"etcd\xff\xfe");
        for path in [
            "/api.Registry/GetPackage",
            "/api.Registry/GetBundle",
            "/api.Registry/GetChannelEntriesThatReplace",
            "/grpc.health.v1.Health/Check",
            "/opreg.v1.Upgrades/Resolve",
        ] {
            let r = raw::unary(ch.clone(), path, bad_utf8.clone()).await;
            assert_codec_rejection(&format!("{path} with invalid UTF-8"), &r);
        }
        let garbage: Vec<Vec<u8>> = vec![
            vec![0xff; 16],                           // a field number 0 / truncated varints
            vec![0x0a, 0xff, 0xff, 0xff, 0xff, 0x07], // a 2 GiB length on a 6-byte message
            vec![0x0a, 0x05, b'a'],                   // length past the end
            vec![0x08],                               // a varint key with no value
            vec![0x0b, 0x14], // a group opened as field 1 and closed as field 2
        ];
        for (i, g) in garbage.iter().enumerate() {
            let r = raw::unary(ch.clone(), "/api.Registry/GetPackage", g.clone()).await;
            assert_codec_rejection(&format!("garbage #{i} to GetPackage"), &r);
            let r = raw::streaming(ch.clone(), "/api.Registry/ListBundles", g.clone()).await;
            match r {
                Err(s)
                    if s.code() == Internal
                        && s.message().contains("failed to decode Protobuf message") => {}
                other => panic!("garbage #{i} to ListBundles: {other:?}"),
            }
        }
        // Unknown fields are skipped, as protobuf requires: an otherwise empty GetPackage.
        let unknown = raw::field(99, b"whatever");
        assert_clean(
            "GetPackage with only an unknown field",
            &raw::unary(ch.clone(), "/api.Registry/GetPackage", unknown).await,
            &[InvalidArgument],
        );

        // Unknown methods and services.
        for path in [
            "/api.Registry/NoSuchMethod",
            "/api.Registry/getpackage",
            "/no.such.Service/Method",
            "/grpc.health.v1.Health/Nope",
            "/",
        ] {
            let r = raw::unary(ch.clone(), path, Vec::new()).await;
            assert_clean(&format!("unary {path}"), &r, &[Unimplemented]);
        }
        let mut h = Health::new(ch.clone());
        assert_clean(
            "Health/Watch",
            &h.watch(tonic_health::pb::HealthCheckRequest::default())
                .await
                .map(|_| ()),
            &[Unimplemented],
        );

        // Not HTTP/2 at all, on fresh TCP connections.
        for bytes in [
            &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
            &b"\x00\x01\x02\x03garbage garbage garbage\r\n\r\n"[..],
            &b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\xff\xff\xff\xff\xff\xff"[..],
        ] {
            use std::io::{Read, Write};
            let mut tcp = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            tcp.write_all(bytes).unwrap();
            let mut sink = Vec::new();
            // The server answers what it can and closes the connection.
            let _ = tcp.read_to_end(&mut sink);
        }

        // The real grpcurl (a Go client): an empty field, a 1 MB name, and a method the
        // server does not have, declared in a throwaway proto so that grpcurl sends it.
        grpcurl_checks(server.port);

        // Still serving, on the old connection and on a new one.
        assert_eq!(health_status(ch.clone()).await.unwrap(), 1);
        let fresh = connect(&server).await;
        assert_eq!(health_status(fresh.clone()).await.unwrap(), 1);
        let p = registry(fresh)
            .get_package(api::GetPackageRequest {
                name: "etcd".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(p.name, "etcd");
    });
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server exited"
    );
    let _ = &mut server;
    assert_eq!(server.terminate(), Some(0));
}
