//! Results checked against the official JSON Schema of their revision.

use serde_json::{Value, json};

fn schema_document(revision: &str) -> Value {
    let candidates = [
        format!(
            "{}/../wymcp/schema/{revision}/schema.json",
            env!("CARGO_MANIFEST_DIR")
        ),
        format!("/work/shared/mcp-schema/{revision}/schema.json"),
    ];
    for path in &candidates {
        if let Ok(text) = std::fs::read_to_string(path) {
            return serde_json::from_str(&text).unwrap();
        }
    }
    panic!("no schema.json of {revision} at {candidates:?}");
}

/// Asserts `value` is valid against `#/$defs/{definition}` of `revision`'s
/// official schema.
#[track_caller]
pub fn assert_schema(revision: &str, definition: &str, value: &Value) {
    let mut document = schema_document(revision);
    assert!(
        document["$defs"].get(definition).is_some(),
        "{revision} has no {definition}"
    );
    document["$ref"] = json!(format!("#/$defs/{definition}"));
    let validator = jsonschema::validator_for(&document).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{value} is not a valid {definition} of {revision}: {errors:?}"
    );
}
