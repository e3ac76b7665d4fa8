//! `CustomResourceDefinition` manifests generated from the Rust types.
//!
//! The committed files under `crds/` are these values rendered as YAML; a
//! test fails when they drift. The schemas are structural (every subschema
//! inlined, no `$ref`), so the same files drive editor validation through
//! yaml-language-server and install into a Kubernetes cluster as they are.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::agent::AgentSpec;
use crate::instance::{InstanceSpec, InstanceStatus};
use crate::workspace::WorkspaceSpec;

/// The API group of every jackin resource.
pub const GROUP: &str = "jackin.dev";
/// The version of the schemas below.
pub const VERSION: &str = "v1alpha1";

/// The CRD for `Instance`.
pub fn instance() -> Value {
    crd(
        "Instance",
        "instances",
        &["inst"],
        schema_of::<InstanceSpec>(),
        Some(schema_of::<InstanceStatus>()),
        json!([
            {"name": "Desired", "type": "string", "jsonPath": ".spec.phase"},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
            {"name": "Container", "type": "string", "jsonPath": ".status.containerName", "priority": 1},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
        ]),
    )
}

/// The CRD for `Workspace`.
pub fn workspace() -> Value {
    crd(
        "Workspace",
        "workspaces",
        &["ws"],
        schema_of::<WorkspaceSpec>(),
        None,
        json!([
            {"name": "Exit-Policy", "type": "string", "jsonPath": ".spec.exitPolicy"},
            {"name": "Keep-Max", "type": "integer", "jsonPath": ".spec.keep.max"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
        ]),
    )
}

/// The CRD for `Agent`.
pub fn agent() -> Value {
    crd(
        "Agent",
        "agents",
        &["ag"],
        schema_of::<AgentSpec>(),
        None,
        json!([
            {"name": "Launch", "type": "string", "jsonPath": ".spec.launch"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
        ]),
    )
}

/// Every CRD, in a stable order, with the file name each is committed under.
pub fn all() -> Vec<(&'static str, Value)> {
    vec![
        ("agents.jackin.dev.yaml", agent()),
        ("instances.jackin.dev.yaml", instance()),
        ("workspaces.jackin.dev.yaml", workspace()),
    ]
}

fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::openapi3()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(map) = schema.as_object_mut() {
        for key in ["$schema", "title", "definitions", "$defs", "components"] {
            map.remove(key);
        }
    }
    make_structural(&mut schema);
    schema
}

/// Rewrites the two shapes schemars emits that a Kubernetes structural
/// schema rejects: `additionalProperties: false` beside `properties` (the
/// API server prunes unknown fields instead), and a `oneOf` of one-value
/// string enums (documented enum variants), which becomes one `enum`.
fn make_structural(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.contains_key("properties")
                && map.get("additionalProperties") == Some(&Value::Bool(false))
            {
                map.remove("additionalProperties");
            }
            let variants = map.get("oneOf").and_then(Value::as_array).and_then(|alts| {
                alts.iter()
                    .map(|alt| match alt["enum"].as_array().map(Vec::as_slice) {
                        Some([single]) if alt["type"] == "string" => Some(single.clone()),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()
            });
            if let Some(variants) = variants {
                map.remove("oneOf");
                map.insert("type".into(), Value::from("string"));
                map.insert("enum".into(), Value::Array(variants));
            }
            map.values_mut().for_each(make_structural);
        }
        Value::Array(items) => items.iter_mut().for_each(make_structural),
        _ => {}
    }
}

fn crd(
    kind: &str,
    plural: &str,
    short_names: &[&str],
    spec: Value,
    status: Option<Value>,
    columns: Value,
) -> Value {
    let mut properties = json!({
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": spec,
    });
    let mut version = json!({
        "name": VERSION,
        "served": true,
        "storage": true,
        "additionalPrinterColumns": columns,
    });
    if let Some(status) = status {
        properties["status"] = status;
        version["subresources"] = json!({"status": {}});
    }
    version["schema"] = json!({
        "openAPIV3Schema": {
            "type": "object",
            "required": ["spec"],
            "properties": properties,
        }
    });
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Cluster",
            "names": {
                "kind": kind,
                "listKind": format!("{kind}List"),
                "plural": plural,
                "singular": kind.to_lowercase(),
                "shortNames": short_names,
            },
            "versions": [version],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Structural schemas may not use `$ref` or `oneOf` alternatives with
    /// types, nor `additionalProperties` beside `properties`.
    fn assert_structural(value: &Value, at: &str) {
        match value {
            Value::Object(map) => {
                assert!(!map.contains_key("$ref"), "$ref at {at}");
                assert!(!map.contains_key("oneOf"), "oneOf at {at}");
                assert!(
                    !(map.contains_key("properties") && map.contains_key("additionalProperties")),
                    "additionalProperties beside properties at {at}"
                );
                for (k, v) in map {
                    assert_structural(v, &format!("{at}.{k}"));
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    assert_structural(v, &format!("{at}[{i}]"));
                }
            }
            _ => {}
        }
    }

    #[test]
    fn schemas_are_inlined_and_closed_enums() {
        for (_, crd) in all() {
            assert_structural(&crd, "");
        }
        let crd = instance();
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(
            spec["properties"]["phase"]["enum"],
            json!(["Running", "Kept", "Purged"])
        );
        assert_eq!(
            spec["properties"]["mounts"]["items"]["properties"]["isolation"]["enum"],
            json!(["shared", "worktree", "clone"])
        );
        let required = spec["required"].as_array().unwrap();
        assert!(required.contains(&json!("agent")));
        assert!(!required.contains(&json!("phase")), "phase has a default");
    }
}
