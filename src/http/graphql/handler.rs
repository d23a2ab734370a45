//! One GraphQL request over HTTP, checked in catalogd's order with its answers:
//!
//! 1. a method other than POST → 405 `Method Not Allowed`;
//! 2. a catalog name that is not a DNS-1123 subdomain → 400 with Kubernetes' messages;
//! 3. a body whose first JSON value is not an object with a string `query` (or is not complete
//!    within 1 MiB) → 400 `Invalid request body`; an empty query → 400 `Query cannot be
//!    empty`; a query over 100,000 bytes → 400 `Query too large`;
//! 4. a query that does not parse or is over a shape limit → 200 with a GraphQL error;
//! 5. another catalog → 404 `404 Not Found`;
//! 6. the query runs (5 s at most) → 200 `application/json`: `{"data": ..., "errors": [...]}`.
//!
//! `variables` (an object) and `operationName` are honoured too; catalogd reads only `query`.

use super::limits::{self, MAX_BODY, MAX_QUERY};
use crate::http::{plain, HttpState};
use async_graphql::{Request as GqlRequest, ServerError, Variables};
use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderValue, Method, Request, StatusCode};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_stream::StreamExt;

/// How long a query may run (catalogd's context timeout).
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// What the body asks.
#[derive(Debug, PartialEq)]
pub struct Params {
    pub query: String,
    pub variables: Option<Map<String, Value>>,
    pub operation_name: Option<String>,
}

/// Answers `req` for the catalog named `catalog` (the decoded path segment).
pub async fn handle(state: Arc<HttpState>, catalog: &str, req: Request<Body>) -> Response {
    if req.method() != Method::POST {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    }
    let errs = crate::names::dns1123_subdomain_errors(catalog);
    if !errs.is_empty() {
        return plain(
            StatusCode::BAD_REQUEST,
            &format!("invalid catalog name: {}", errs.join("; ")),
        );
    }
    let body = read_body(req.into_body()).await;
    let params = match parse_params(&body) {
        Some(p) => p,
        None => return plain(StatusCode::BAD_REQUEST, "Invalid request body"),
    };
    if params.query.is_empty() {
        return plain(StatusCode::BAD_REQUEST, "Query cannot be empty");
    }
    if params.query.len() > MAX_QUERY {
        return plain(StatusCode::BAD_REQUEST, "Query too large");
    }
    let doc = match limits::validate(&params.query) {
        Ok(d) => d,
        Err(e) => return answer(Value::Null, vec![error_json(&e.to_string(), &[])]),
    };
    let content = match state.content() {
        Some(c) if catalog == state.name => c,
        _ => return plain(StatusCode::NOT_FOUND, "404 Not Found"),
    };
    let schema = match state.graphql.schema(&content).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "no GraphQL schema for the served catalog");
            return plain(StatusCode::INTERNAL_SERVER_ERROR, &e);
        }
    };
    let mut gql = GqlRequest::new(params.query).data(content);
    if let Some(v) = params.variables {
        gql = gql.variables(Variables::from_json(Value::Object(v)));
    }
    if let Some(op) = params.operation_name {
        gql = gql.operation_name(op);
    }
    gql.set_parsed_query(doc);
    match tokio::time::timeout(QUERY_TIMEOUT, schema.execute(gql)).await {
        Ok(resp) => {
            let data = serde_json::to_value(&resp.data).unwrap_or(Value::Null);
            let errors = resp.errors.iter().map(server_error_json).collect();
            answer(data, errors)
        }
        Err(_) => answer(
            Value::Null,
            vec![error_json("context deadline exceeded", &[])],
        ),
    }
}

/// The body's first [`MAX_BODY`] bytes (Go's `MaxBytesReader`: what lies past them is not
/// read, and a value not complete within them does not decode).
async fn read_body(body: Body) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else { break };
        let room = MAX_BODY - out.len();
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() == MAX_BODY {
            break;
        }
    }
    out
}

/// Decodes the body's first JSON value as Go's `json.Decoder` decodes it into catalogd's
/// struct: `null` is an empty request, keys match case-insensitively when not exactly, and
/// anything after the value is not looked at. `None`: not a request.
pub fn parse_params(body: &[u8]) -> Option<Params> {
    let first = serde_json::Deserializer::from_slice(body)
        .into_iter::<Value>()
        .next()?
        .ok()?;
    let obj = match first {
        Value::Null => Map::new(),
        Value::Object(m) => m,
        _ => return None,
    };
    let find = |name: &str| {
        obj.get(name).or_else(|| {
            obj.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        })
    };
    let string = |v: Option<&Value>| match v {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) => Some(Some(s.clone())),
        Some(_) => None,
    };
    let variables = match find("variables") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => return None,
    };
    Some(Params {
        query: string(find("query"))?.unwrap_or_default(),
        variables,
        operation_name: string(find("operationName"))?,
    })
}

/// An error as graphql-go formats it: a message and its locations (possibly none).
fn error_json(message: &str, locations: &[(usize, usize)]) -> Value {
    let locs: Vec<Value> = locations
        .iter()
        .map(|(l, c)| json!({"line": l, "column": c}))
        .collect();
    json!({"message": message, "locations": locs})
}

fn server_error_json(e: &ServerError) -> Value {
    let locs: Vec<(usize, usize)> = e.locations.iter().map(|p| (p.line, p.column)).collect();
    let mut v = error_json(&e.message, &locs);
    if !e.path.is_empty() {
        v["path"] = serde_json::to_value(&e.path).unwrap_or(Value::Null);
    }
    v
}

/// The 200 answer: `data`, then `errors` when there are any; encoded as Go's `json.Encoder`
/// encodes graphql-go's result (object keys sorted, HTML characters escaped, a newline at the
/// end).
fn answer(data: Value, errors: Vec<Value>) -> Response {
    let mut m = Map::new();
    m.insert("data".into(), data);
    let mut text = serde_json::to_string(&Value::Object(m)).unwrap_or_default();
    if !errors.is_empty() {
        // `data` comes first, as graphql-go's result struct writes it.
        text.pop();
        text.push_str(",\"errors\":");
        text.push_str(&serde_json::to_string(&errors).unwrap_or_default());
        text.push('}');
    }
    let mut text = crate::json::go_html_escape(text);
    text.push('\n');
    let mut r = Response::new(Body::from(text));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_decode_as_go() {
        let p = |s: &str| parse_params(s.as_bytes());
        assert_eq!(p(r#"{"query":"{ a }"}"#).unwrap().query, "{ a }");
        assert_eq!(p(r#"{"Query":"{ a }"}"#).unwrap().query, "{ a }");
        assert_eq!(p("null").unwrap().query, "");
        assert_eq!(p(r#"{"query":"x"} trailing"#).unwrap().query, "x");
        assert!(p("{invalid json").is_none());
        assert!(p("").is_none());
        assert!(p("[]").is_none());
        assert!(p(r#"{"query":5}"#).is_none());
        assert!(p(&"a".repeat(MAX_BODY)).is_none());
        let full = p(r#"{"query":"q","variables":{"n":1},"operationName":"Op"}"#).unwrap();
        assert_eq!(full.operation_name.as_deref(), Some("Op"));
        assert_eq!(full.variables.unwrap()["n"], 1);
        assert!(p(r#"{"query":"q","variables":"x"}"#).is_none());
    }
}
