//! catalogd's names for the GraphQL schema: a JSON key becomes a camelCase field name
//! (`default_channel` → `defaultChannel`), a catalog schema becomes a type name
//! (`olm.bundle` → `OlmBundle`) and a root query field (`olm.bundle` → `olmbundles`).

/// A JSON key as a GraphQL field name: characters outside `[A-Za-z0-9_]` become `_`, runs of
/// `_` collapse, leading `_` go; the parts are joined in camelCase (the first lowercased whole
/// when it is all upper case, else only its first letter); a name that does not start with a
/// letter gets `field_` in front; the empty key is `value`.
pub fn field_name(key: &str) -> String {
    if key.is_empty() {
        return "value".to_string();
    }
    let clean: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let mut out = String::with_capacity(clean.len());
    let mut first = true;
    for part in clean.split('_').filter(|p| !p.is_empty()) {
        let (head, tail) = part.split_at(1);
        if first {
            if part.to_ascii_uppercase() == part {
                out.push_str(&part.to_ascii_lowercase());
            } else {
                out.push_str(&head.to_ascii_lowercase());
                out.push_str(tail);
            }
            first = false;
        } else {
            out.push_str(&head.to_ascii_uppercase());
            out.push_str(&tail.to_ascii_lowercase());
        }
    }
    if !out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.insert_str(0, "field_");
    }
    out
}

/// A schema or field name as a GraphQL type name: non-alphanumerics split words, leading
/// digits go, each word is capitalized (`complex.type-name_here` → `ComplexTypeNameHere`);
/// nothing left is `Unknown`.
pub fn type_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let clean = clean.trim_start_matches(|c: char| c.is_ascii_digit());
    let mut out = String::new();
    for part in clean.split('_').filter(|p| !p.is_empty()) {
        let (head, tail) = part.split_at(1);
        out.push_str(&head.to_ascii_uppercase());
        out.push_str(&tail.to_ascii_lowercase());
    }
    if out.is_empty() {
        out.push_str("Unknown");
    }
    out
}

/// The root query field of a schema: its alphanumerics, lowercased, and an `s`
/// (`olm.package` → `olmpackages`, `helm.chart` → `helmcharts`).
pub fn root_field(schema: &str) -> String {
    let mut out: String = schema
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    out.push('s');
    out
}

/// Whether `s` is a valid GraphQL name (`/^[_A-Za-z][_0-9A-Za-z]*$/`).
pub fn is_valid(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f == '_' || f.is_ascii_alphabetic())
        && c.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// catalogd's TestFieldNameRemapping and its edge cases.
    #[test]
    fn field_names_as_catalogd() {
        for (input, want) in [
            ("name", "name"),
            ("package-name", "packageName"),
            ("default_channel", "defaultChannel"),
            ("related-images", "relatedImages"),
            ("", "value"),
            ("123invalid", "field_123invalid"),
            ("my.field.name", "myFieldName"),
            ("CamelCase", "camelCase"),
            ("UPPERCASE", "uppercase"),
            ("mixed_case-field.name", "mixedCaseFieldName"),
            (
                "spec.template.spec.containers",
                "specTemplateSpecContainers",
            ),
            (
                "metadata.annotations.description",
                "metadataAnnotationsDescription",
            ),
            (
                "operators.operatorframework.io/bundle.channels.v1",
                "operatorsOperatorframeworkIoBundleChannelsV1",
            ),
            ("---", "field_"),
            ("123", "field_123"),
            ("field@#$%", "field"),
        ] {
            assert_eq!(field_name(input), want, "{input:?}");
        }
    }

    /// catalogd's TestSanitizeTypeName and its edge cases.
    #[test]
    fn type_names_as_catalogd() {
        for (input, want) in [
            ("olm.package", "OlmPackage"),
            ("olm.gvk", "OlmGvk"),
            ("some-type", "SomeType"),
            ("complex.type-name_here", "ComplexTypeNameHere"),
            ("", "Unknown"),
            ("123invalid", "Invalid"),
            (
                "operators.operatorframework.io/bundle.channels.v1",
                "OperatorsOperatorframeworkIoBundleChannelsV1",
            ),
            ("@#$%", "Unknown"),
            ("_____", "Unknown"),
            ("ABC", "Abc"),
            ("lowercase", "Lowercase"),
        ] {
            assert_eq!(type_name(input), want, "{input:?}");
        }
    }

    /// The naming table of catalogd's GraphQL how-to.
    #[test]
    fn root_fields_as_catalogd() {
        for (input, want) in [
            ("olm.bundle", "olmbundles"),
            ("olm.package", "olmpackages"),
            ("olm.channel", "olmchannels"),
            ("helm.chart", "helmcharts"),
            ("OLM.Bundle", "olmbundles"),
        ] {
            assert_eq!(root_field(input), want);
        }
        assert!(is_valid("olmbundles") && is_valid("_x1"));
        assert!(!is_valid("1abcs") && !is_valid("") && !is_valid("a-b"));
    }
}
