//! The GraphQL schema of one catalog version, built with async-graphql's dynamic schema from
//! what [discovery](super::discover) found, as catalogd builds it:
//!
//! * a root field per catalog schema ([`root_field`]) listing its objects, with `limit`
//!   (default 100; 0, negative or over 100 mean 100) and `offset` (negative means 0);
//! * an object type per schema ([`type_name`]), a field per discovered key; an array of
//!   objects is a list of a nested type named after the schema and the field
//!   (`OlmBundleProperties`);
//! * `summary { totalSchemas schemas { name totalObjects totalFields } }`, and introspection.
//!
//! The schema holds no catalog data: a root field reads its page of objects from the served
//! version's file through the index by schema, with the version the request started on
//! (request data), and keeps only the members the query selects.

use super::discover::{CatalogSchema, FieldInfo, SchemaInfo};
use super::naming::{is_valid, root_field, type_name};
use super::values::{nested_get, to_graphql, Object};
use crate::http::content::Content;
use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, Object as GqlObject, ResolverContext, Schema,
    TypeRef,
};
use async_graphql::{Error, Value as GqlValue};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Most objects a root field answers, and its default.
pub const MAX_LIMIT: i64 = 100;

/// Why a catalog's objects give no schema (catalogd refuses such a catalog at ingest).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("type name collision: {0:?} and {1:?} both make the GraphQL type {2:?}")]
    TypeCollision(String, String, String),
    #[error("query field collision: schemas {0:?} and {1:?} both map to field {2:?}")]
    FieldCollision(String, String, String),
    #[error("schema {0:?} makes {1:?}, which is not a GraphQL name")]
    InvalidName(String, String),
    #[error("cannot build the GraphQL schema: {0}")]
    Schema(String),
}

/// Types every schema has besides the discovered ones.
const FIXED_TYPES: [&str; 8] = [
    "Query",
    "CatalogSummary",
    "SchemaSummary",
    "String",
    "Int",
    "Float",
    "Boolean",
    "ID",
];

/// Builds the schema of `cs`.
pub fn build(cs: &CatalogSchema) -> Result<Schema, BuildError> {
    // Every type name once (the fixed ones included), every root field once.
    let mut types: BTreeMap<String, String> = FIXED_TYPES
        .iter()
        .map(|t| (t.to_string(), format!("({t})")))
        .collect();
    let mut claim = |ty: String, owner: String| -> Result<String, BuildError> {
        if !is_valid(&ty) || ty.starts_with("__") {
            return Err(BuildError::InvalidName(owner, ty));
        }
        match types.insert(ty.clone(), owner.clone()) {
            Some(prev) => Err(BuildError::TypeCollision(prev, owner, ty)),
            None => Ok(ty),
        }
    };
    let mut roots: BTreeMap<String, &str> = BTreeMap::new();
    let mut builder = Schema::build("Query", None, None);
    let mut query = GqlObject::new("Query");
    for (schema, info) in &cs.schemas {
        let root = root_field(schema);
        if !is_valid(&root) {
            return Err(BuildError::InvalidName(schema.clone(), root));
        }
        if let Some(prev) = roots.insert(root.clone(), schema) {
            return Err(BuildError::FieldCollision(
                prev.into(),
                schema.clone(),
                root,
            ));
        }
        let ty = claim(type_name(schema), schema.clone())?;
        let mut obj = GqlObject::new(&ty);
        for f in info.fields.values() {
            if f.nested.is_empty() {
                obj = obj.field(scalar_field(f, false));
                continue;
            }
            let nested_ty = claim(
                format!("{ty}{}", type_name(&f.name)),
                format!("{schema}.{}", f.name),
            )?;
            let mut nested = GqlObject::new(&nested_ty);
            for n in f.nested.values() {
                nested = nested.field(scalar_field(n, true));
            }
            builder = builder.register(nested);
            obj = obj.field(object_list_field(f, &nested_ty));
        }
        builder = builder.register(obj);
        query = query.field(root_query_field(&root, schema, &ty));
    }
    let (summary, schema_summary) = summary_types();
    query = query.field(summary_field(cs));
    builder
        .register(summary)
        .register(schema_summary)
        .register(query)
        .finish()
        .map_err(|e| BuildError::Schema(e.0))
}

/// A scalar (or list of scalars) field: from a top-level object, or from an element of an
/// array of objects when `in_nested`.
fn scalar_field(f: &FieldInfo, in_nested: bool) -> Field {
    let ty = match f.is_array {
        true => TypeRef::named_list(f.scalar.name()),
        false => TypeRef::named(f.scalar.name()),
    };
    let (name, scalar, list) = (f.name.clone(), f.scalar, f.is_array);
    Field::new(f.name.clone(), ty, move |ctx| {
        let name = name.clone();
        FieldFuture::new(async move {
            let v = if in_nested {
                let src = ctx.parent_value.try_downcast_ref::<serde_json::Value>()?;
                nested_get(src, &name).cloned()
            } else {
                ctx.parent_value.try_downcast_ref::<Object>()?.get(&name)
            };
            let out = to_graphql(v.as_ref(), scalar, list).map_err(|e| field_error(&ctx, e))?;
            // A missing or null value is the field's null (GraphQL's nullable list included),
            // never a value that the list type would reject.
            Ok((out != GqlValue::Null).then(|| FieldValue::value(out)))
        })
    })
}

fn field_error(ctx: &ResolverContext, e: impl std::fmt::Display) -> Error {
    Error::new(format!("{e} for field {}", ctx.field().name()))
}

/// An array of objects: a list of the nested type, one element per array element.
fn object_list_field(f: &FieldInfo, nested_ty: &str) -> Field {
    let name = f.name.clone();
    Field::new(f.name.clone(), TypeRef::named_list(nested_ty), move |ctx| {
        let name = name.clone();
        FieldFuture::new(async move {
            let obj = ctx.parent_value.try_downcast_ref::<Object>()?;
            match obj.get(&name) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::Array(items)) => Ok(Some(FieldValue::list(
                    items.into_iter().map(FieldValue::owned_any),
                ))),
                Some(_) => Err(field_error(&ctx, "expected a list")),
            }
        })
    })
}

/// A root field: a page of the schema's objects, read from the request's version.
fn root_query_field(root: &str, schema: &str, ty: &str) -> Field {
    let schema = Arc::new(schema.to_string());
    Field::new(root, TypeRef::named_list(ty), move |ctx| {
        let schema = schema.clone();
        FieldFuture::new(async move {
            let arg = |n: &str| ctx.args.get(n).and_then(|v| v.i64().ok());
            let limit = match arg("limit") {
                Some(l) if l > 0 && l <= MAX_LIMIT => l as usize,
                _ => MAX_LIMIT as usize,
            };
            let offset = arg("offset").unwrap_or(0).max(0) as usize;
            let wanted: Vec<String> = ctx
                .field()
                .selection_set()
                .map(|f| f.name().to_string())
                .collect();
            let content = ctx.data::<Arc<Content>>()?.clone();
            let objects = tokio::task::spawn_blocking(move || {
                load(&content, &schema, offset, limit, Some(&wanted))
            })
            .await
            .map_err(|e| Error::new(e.to_string()))?
            .map_err(|e| Error::new(format!("error loading objects: {e}")))?;
            Ok(Some(FieldValue::list(
                objects.into_iter().map(FieldValue::owned_any),
            )))
        })
    })
    .argument(
        InputValue::new("limit", TypeRef::named(TypeRef::INT))
            .default_value(MAX_LIMIT)
            .description("Maximum number of items to return"),
    )
    .argument(
        InputValue::new("offset", TypeRef::named(TypeRef::INT))
            .default_value(0)
            .description("Number of items to skip"),
    )
}

/// Objects `offset..offset+limit` of `schema`, in file order, read from the version's file
/// through its index (an object that does not parse is left out).
pub fn load(
    content: &Content,
    schema: &str,
    offset: usize,
    limit: usize,
    wanted: Option<&[String]>,
) -> std::io::Result<Vec<Object>> {
    use std::os::unix::fs::FileExt;
    let sections = content.sections(schema, "", "");
    let page = sections.iter().skip(offset).take(limit);
    if sections.len() <= offset {
        return Ok(Vec::new());
    }
    let file = std::fs::File::open(&content.path)?;
    let mut out = Vec::with_capacity(limit.min(sections.len() - offset));
    let mut buf = Vec::new();
    for s in page {
        buf.resize(s.len as usize, 0);
        file.read_exact_at(&mut buf, s.offset)?;
        if let Some(o) = std::str::from_utf8(&buf)
            .ok()
            .and_then(|t| Object::parse(t, wanted))
        {
            out.push(o);
        }
    }
    Ok(out)
}

fn summary_types() -> (GqlObject, GqlObject) {
    let key = |name: &'static str, ty: &'static str| {
        Field::new(name, TypeRef::named(ty), move |ctx| {
            FieldFuture::new(async move {
                let v = match ctx.parent_value.as_value() {
                    Some(GqlValue::Object(m)) => m.get(name).cloned(),
                    _ => None,
                };
                Ok(v.map(FieldValue::value))
            })
        })
    };
    let summary = GqlObject::new("CatalogSummary")
        .field(key("totalSchemas", TypeRef::INT))
        .field(Field::new(
            "schemas",
            TypeRef::named_list("SchemaSummary"),
            |ctx| {
                FieldFuture::new(async move {
                    let list = match ctx.parent_value.as_value() {
                        Some(GqlValue::Object(m)) => match m.get("schemas") {
                            Some(GqlValue::List(l)) => l.clone(),
                            _ => Vec::new(),
                        },
                        _ => Vec::new(),
                    };
                    Ok(Some(FieldValue::list(
                        list.into_iter().map(FieldValue::value),
                    )))
                })
            },
        ));
    let schema = GqlObject::new("SchemaSummary")
        .field(key("name", TypeRef::STRING))
        .field(key("totalObjects", TypeRef::INT))
        .field(key("totalFields", TypeRef::INT));
    (summary, schema)
}

fn summary_field(cs: &CatalogSchema) -> Field {
    let value = Arc::new(summary_value(cs));
    Field::new("summary", TypeRef::named("CatalogSummary"), move |_| {
        let v = (*value).clone();
        FieldFuture::new(async move { Ok(Some(FieldValue::value(v))) })
    })
}

fn summary_value(cs: &CatalogSchema) -> GqlValue {
    let one = |(name, info): (&String, &SchemaInfo)| {
        let mut m = async_graphql::dynamic::indexmap::IndexMap::new();
        m.insert(
            async_graphql::Name::new("name"),
            GqlValue::from(name.as_str()),
        );
        m.insert(
            async_graphql::Name::new("totalObjects"),
            GqlValue::from(info.total_objects as u64),
        );
        m.insert(
            async_graphql::Name::new("totalFields"),
            GqlValue::from(info.fields.len() as u64),
        );
        GqlValue::Object(m)
    };
    let mut m = async_graphql::dynamic::indexmap::IndexMap::new();
    m.insert(
        async_graphql::Name::new("totalSchemas"),
        GqlValue::from(cs.schemas.len() as u64),
    );
    m.insert(
        async_graphql::Name::new("schemas"),
        GqlValue::List(cs.schemas.iter().map(one).collect()),
    );
    GqlValue::Object(m)
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
