//! The schemas of the accounts' bodies in `/openapi.json`: `/api_keys`, `/admin`, `/projects`.

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
        "project": {"type": ["string", "null"], "description": "The project the key is bound to: it launches, uploads and lists there, and reads no job of another. Null: wherever its owner may."},
    })
}

const KEY_FIELDS: [&str; 9] = [
    "id",
    "prefix",
    "name",
    "owner",
    "scopes",
    "created_at",
    "expires_at",
    "last_used_at",
    "project",
];

pub fn create_key() -> Value {
    json!({
        "title": "CreateApiKey",
        "type": "object",
        "required": ["name", "scopes"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 100},
            "scopes": {"type": "array", "minItems": 1, "items": {"enum": ["read", "launch", "publish", "admin"]}},
            "expires_at": {"type": ["string", "null"], "format": "date-time", "description": "When the key stops working (RFC 3339, in the future); never if absent."},
            "project": {"type": ["string", "null"], "minLength": 1, "description": "A project of the caller's (GET /projects) to bind the key to; a viewer's key for it is read-only. Unbound if absent."},
        },
        "additionalProperties": false,
    })
}

pub fn key_created() -> Value {
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

pub fn key_list() -> Value {
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

fn user() -> Value {
    let quota = json!({"type": ["integer", "null"], "minimum": 0});
    json!({
        "type": "object",
        "required": ["username", "role", "disabled", "created_at", "quotas"],
        "properties": {
            "username": {"type": "string"},
            "role": {"enum": ["admin", "member", "viewer"]},
            "disabled": {"type": "boolean"},
            "created_at": {"type": "string", "format": "date-time"},
            "quotas": {
                "type": "object",
                "required": ["pending_jobs", "dataset_bytes", "output_bytes"],
                "properties": {"pending_jobs": quota, "dataset_bytes": quota, "output_bytes": quota},
                "additionalProperties": false,
            },
        },
        "additionalProperties": false,
    })
}

pub fn user_view() -> Value {
    let mut schema = user();
    schema["title"] = json!("User");
    schema
}

pub fn user_list() -> Value {
    json!({
        "title": "UserList",
        "type": "object",
        "required": ["users"],
        "properties": {"users": {"type": "array", "items": user()}},
        "additionalProperties": false,
    })
}

pub fn new_user() -> Value {
    json!({
        "title": "NewUser",
        "type": "object",
        "required": ["username", "password"],
        "properties": {
            "username": {"type": "string", "minLength": 1, "maxLength": 64,
                         "pattern": "^[A-Za-z0-9][A-Za-z0-9._@+-]*$",
                         "description": "Capitals are folded: Alice is alice."},
            "password": {"type": "string", "minLength": 8},
            "role": {"enum": ["admin", "member", "viewer", null], "description": "member if absent or null."},
        },
        "additionalProperties": false,
    })
}

pub fn user_change() -> Value {
    let quota = json!({"type": ["integer", "null"], "minimum": 0});
    json!({
        "title": "UserChange",
        "type": "object",
        "minProperties": 1,
        "properties": {
            "role": {"enum": ["admin", "member", "viewer", null]},
            "disabled": {"type": ["boolean", "null"]},
            "password": {"type": ["string", "null"], "minLength": 8},
            "revoke_tokens": {"type": ["boolean", "null"], "description": "true: every token issued until now stops working."},
            "quotas": {
                "type": ["object", "null"],
                "properties": {"pending_jobs": quota, "dataset_bytes": quota, "output_bytes": quota},
                "additionalProperties": false,
                "description": "Replaces all three; one left out or null is the server's default.",
            },
        },
        "additionalProperties": false,
    })
}

pub fn audit_page() -> Value {
    let event = json!({
        "type": "object",
        "required": ["seq", "at", "actor", "action", "target", "detail"],
        "properties": {
            "seq": {"type": "integer"},
            "at": {"type": "string", "format": "date-time"},
            "actor": {"type": "string", "description": "A user name, `host` for a command on the host, or a client address for failed logins."},
            "action": {"type": "string"},
            "target": {"type": "string"},
            "detail": {},
        },
        "additionalProperties": false,
    });
    json!({
        "title": "AuditPage",
        "type": "object",
        "required": ["events", "next_before"],
        "properties": {
            "events": {"type": "array", "items": event},
            "next_before": {"type": ["integer", "null"]},
        },
        "additionalProperties": false,
    })
}

fn project() -> Value {
    json!({
        "type": "object",
        "required": ["id", "name", "created_at", "members", "max_pending_jobs"],
        "properties": {
            "id": {"type": "string"},
            "name": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
            "max_pending_jobs": {"type": ["integer", "null"], "minimum": 0, "description": "The project's own cap on pending jobs, beside each member's; null if none."},
            "members": {"type": "array", "items": {
                "type": "object",
                "required": ["username", "role"],
                "properties": {"username": {"type": "string"}, "role": {"enum": ["member", "viewer"]}},
                "additionalProperties": false,
            }},
        },
        "additionalProperties": false,
    })
}

pub fn project_view() -> Value {
    let mut schema = project();
    schema["title"] = json!("Project");
    schema
}

pub fn project_list() -> Value {
    json!({
        "title": "ProjectList",
        "type": "object",
        "required": ["projects"],
        "properties": {"projects": {"type": "array", "items": project()}},
        "additionalProperties": false,
    })
}

pub fn user_project_list() -> Value {
    json!({
        "title": "UserProjectList",
        "type": "object",
        "required": ["projects"],
        "properties": {"projects": {"type": "array", "items": {
            "type": "object",
            "required": ["id", "name", "role", "personal"],
            "properties": {
                "id": {"type": "string"},
                "name": {"type": "string"},
                "role": {"enum": ["member", "viewer"]},
                "personal": {"type": "boolean"},
            },
            "additionalProperties": false,
        }}},
        "additionalProperties": false,
    })
}

pub fn new_project() -> Value {
    json!({
        "title": "NewProject",
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 100}},
        "additionalProperties": false,
    })
}

pub fn project_quota() -> Value {
    json!({
        "title": "ProjectQuota",
        "type": "object",
        "properties": {"max_pending_jobs": {"type": ["integer", "null"], "minimum": 0, "description": "The project's own cap on pending jobs; null or absent: none."}},
        "additionalProperties": false,
    })
}

pub fn project_membership() -> Value {
    json!({
        "title": "ProjectMembership",
        "type": "object",
        "required": ["role"],
        "properties": {"role": {"enum": ["member", "viewer"]}},
        "additionalProperties": false,
    })
}
