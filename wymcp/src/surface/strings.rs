//! Typed string maps: prompt arguments and URI template variables arrive as
//! strings by name; a handler may take them as a struct instead. The
//! struct's JSON Schema (derived with `schemars`) names its fields, says
//! which are required and what each holds; each string is read as the JSON
//! type its field's schema gives (`integer`, `number`, `boolean`, else a
//! string), then the whole deserialised into the struct.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// What a string of a field is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Integer,
    Number,
    Boolean,
}

/// One field of a typed string map, as its schema describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) required: bool,
    kind: Kind,
}

/// The fields of a struct, from its JSON Schema: the root's `properties`
/// (none for a map, which takes every string as it is).
pub(crate) fn fields_of(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| Field {
            name: name.clone(),
            description: property
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            required: required.contains(&name.as_str()),
            kind: kind_of(property),
        })
        .collect()
}

/// The kind a property's `type` gives (`["integer", "null"]` for an
/// `Option<u32>` is an integer).
fn kind_of(property: &Value) -> Kind {
    let named = |t: &str| match t {
        "integer" => Some(Kind::Integer),
        "number" => Some(Kind::Number),
        "boolean" => Some(Kind::Boolean),
        _ => None,
    };
    match property.get("type") {
        Some(Value::String(t)) => named(t).unwrap_or(Kind::String),
        Some(Value::Array(types)) => {
            let mut kinds = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null");
            match (kinds.next(), kinds.next()) {
                (Some(only), None) => named(only).unwrap_or(Kind::String),
                _ => Kind::String,
            }
        }
        _ => Kind::String,
    }
}

/// Why a string map did not read into its struct: the field (`""` for the
/// whole) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable {
    pub(crate) field: String,
    pub(crate) message: String,
}

/// `strings` read into `T`, each string as the kind of its field in
/// `fields` (a string when it has no field).
pub(crate) fn read<T: DeserializeOwned>(
    fields: &[Field],
    strings: &BTreeMap<String, String>,
) -> Result<T, Unreadable> {
    let mut object = Map::new();
    for (name, text) in strings {
        let kind = fields
            .iter()
            .find(|f| &f.name == name)
            .map_or(Kind::String, |f| f.kind);
        let value = match kind {
            Kind::String => Some(Value::String(text.clone())),
            Kind::Integer => text
                .parse::<i64>()
                .map(Value::from)
                .or_else(|_| text.parse::<u64>().map(Value::from))
                .ok(),
            Kind::Number => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number),
            Kind::Boolean => match text.as_str() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
        };
        let Some(value) = value else {
            let expected = match kind {
                Kind::Integer => "an integer",
                Kind::Number => "a number",
                Kind::Boolean => "`true` or `false`",
                Kind::String => "a string",
            };
            return Err(Unreadable {
                field: name.clone(),
                message: format!("expected {expected}"),
            });
        };
        object.insert(name.clone(), value);
    }
    serde_path_to_error::deserialize(Value::Object(object)).map_err(|e| Unreadable {
        field: e.path().to_string().trim_start_matches('.').to_owned(),
        message: e.inner().to_string(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        /// The note's id.
        id: u64,
        /// Whether to include archived notes.
        archived: Option<bool>,
        weight: f64,
        title: String,
    }

    fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn fields_come_from_the_schema() {
        let fields = fields_of(&schemars::schema_for!(Args).to_value());
        let id = fields.iter().find(|f| f.name == "id").unwrap();
        assert_eq!(id.description.as_deref(), Some("The note's id."));
        assert!(id.required);
        let archived = fields.iter().find(|f| f.name == "archived").unwrap();
        assert!(!archived.required);
        assert_eq!(archived.kind, Kind::Boolean);
        let map = fields_of(&schemars::schema_for!(BTreeMap<String, String>).to_value());
        assert!(map.is_empty());
    }

    #[test]
    fn strings_are_read_as_their_fields_types() {
        let fields = fields_of(&schemars::schema_for!(Args).to_value());
        let args: Args = read(
            &fields,
            &strings(&[
                ("id", "42"),
                ("archived", "true"),
                ("weight", "0.5"),
                ("title", "7"),
            ]),
        )
        .unwrap();
        assert_eq!(
            args,
            Args {
                id: 42,
                archived: Some(true),
                weight: 0.5,
                title: "7".into()
            }
        );
        let bad = read::<Args>(
            &fields,
            &strings(&[("id", "x"), ("weight", "1"), ("title", "t")]),
        )
        .unwrap_err();
        assert_eq!(
            (bad.field.as_str(), bad.message.as_str()),
            ("id", "expected an integer")
        );
        let missing = read::<Args>(&fields, &strings(&[("id", "1"), ("weight", "1")])).unwrap_err();
        assert!(missing.message.contains("title"), "{missing:?}");
        let any: BTreeMap<String, String> = read(&[], &strings(&[("a", "1")])).unwrap();
        assert_eq!(any["a"], "1");
    }
}
