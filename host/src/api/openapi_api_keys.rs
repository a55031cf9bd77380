//! The schemas of `/api_keys`' bodies in `/openapi.json`.

use serde_json::{Value, json};

fn key_properties() -> Value {
    json!({
        "id": {"type": "string", "description": "What DELETE /api_keys/{key_id} takes."},
        "prefix": {"type": "string", "description": "cl_<id>: how the key starts."},
        "name": {"type": "string"},
        "owner": {"type": "string"},
        "scopes": {"type": "array", "items": {"enum": ["read", "launch", "publish", "admin"]}},
        "created_at": {"type": "string", "format": "date-time"},
        "expires_at": {"type": ["string", "null"], "format": "date-time"},
        "last_used_at": {"type": ["string", "null"], "format": "date-time", "description": "To the minute."},
    })
}

const KEY_FIELDS: [&str; 8] = [
    "id",
    "prefix",
    "name",
    "owner",
    "scopes",
    "created_at",
    "expires_at",
    "last_used_at",
];

pub fn create() -> Value {
    json!({
        "title": "CreateApiKey",
        "type": "object",
        "required": ["name", "scopes"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 100},
            "scopes": {"type": "array", "minItems": 1, "items": {"enum": ["read", "launch", "publish", "admin"]}},
            "expires_at": {"type": ["string", "null"], "format": "date-time", "description": "When the key stops working (RFC 3339, in the future); never if absent."},
        },
        "additionalProperties": false,
    })
}

pub fn created() -> Value {
    let mut properties = key_properties();
    properties["key"] =
        json!({"type": "string", "description": "The key, cl_<id>_<secret>: shown this once."});
    let mut required: Vec<&str> = KEY_FIELDS.to_vec();
    required.push("key");
    json!({
        "title": "ApiKeyCreated",
        "type": "object",
        "required": required,
        "properties": properties,
        "additionalProperties": false,
    })
}

pub fn list() -> Value {
    let key = json!({
        "type": "object",
        "required": KEY_FIELDS,
        "properties": key_properties(),
        "additionalProperties": false,
    });
    json!({
        "title": "ApiKeyList",
        "type": "object",
        "required": ["api_keys"],
        "properties": {"api_keys": {"type": "array", "items": key}},
        "additionalProperties": false,
    })
}
