//! `GET /openapi.json`, made for each request from what is loaded: the paths of
//! `schemas/api/openapi.json`, the bodies' schemas of `schemas/api/` made self-contained
//! components (their `$defs` lifted under `#/components/schemas`, which is where code
//! generators resolve references), and for each use case a `POST /problem/<name>` whose body is
//! that use case's input schema, so a generated client gets one typed call per use case.

use serde_json::{Map, Value, json};

use crate::api::accounts::openapi_accounts as accounts;
use crate::domain::labels::MAX_LABELS;
use crate::domain::launch::MAX_BATCH;
use crate::plugins::PluginRegistry;

/// The body schemas of `schemas/api/`, by the component names the paths refer to.
const BODY_SCHEMAS: [(&str, &str); 7] = [
    (
        "Token",
        include_str!("../../../schemas/api/token.schema.json"),
    ),
    (
        "RunJob",
        include_str!("../../../schemas/api/run-job.schema.json"),
    ),
    (
        "JobStatusResponse",
        include_str!("../../../schemas/api/job-status.schema.json"),
    ),
    (
        "Problem",
        include_str!("../../../schemas/api/problem.schema.json"),
    ),
    (
        "DataFile",
        include_str!("../../../schemas/api/data-file.schema.json"),
    ),
    (
        "Cancel",
        include_str!("../../../schemas/api/cancel.schema.json"),
    ),
    (
        "Evaluation",
        include_str!("../../../schemas/api/evaluation.schema.json"),
    ),
];

/// What a created thing's id leads to, for stateful clients and fuzzers (OpenAPI links):
/// the operation that made it (path, method, status), then each link's name, the operation it
/// leads to, and its parameters, each from the answer's body.
type Link = (&'static str, &'static str, &'static str, &'static [Target]);

/// One link: its name, the operation it leads to, and that operation's parameters.
type Target = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// Every operation a created id opens, so that stateful testing reaches each of them.
const LINKS: &[Link] = &[
    ("/problem/{problem_id}", "post", "202", JOB_LINKS),
    ("/job/{job_id}/rerun", "post", "202", JOB_LINKS),
    (
        "/problem/{problem_id}/batch",
        "post",
        "202",
        &[
            (
                "GetFirstJob",
                "get_job",
                &[("job_id", "$response.body#/jobs/0")],
            ),
            (
                "CancelFirstJob",
                "cancel_job",
                &[("job_id", "$response.body#/jobs/0")],
            ),
        ],
    ),
    (
        "/experiments",
        "post",
        "201",
        &[
            (
                "GetExperiment",
                "get_experiment",
                &[("experiment_id", "$response.body#/experiment")],
            ),
            (
                "CancelExperiment",
                "cancel_experiment",
                &[("experiment_id", "$response.body#/experiment")],
            ),
        ],
    ),
    (
        "/api_keys",
        "post",
        "201",
        &[(
            "RevokeApiKey",
            "revoke_api_key",
            &[("key_id", "$response.body#/id")],
        )],
    ),
    (
        "/admin/users",
        "post",
        "201",
        &[
            (
                "ChangeUser",
                "change_user",
                &[("username", "$response.body#/username")],
            ),
            (
                "DeleteUser",
                "delete_user",
                &[("username", "$response.body#/username")],
            ),
        ],
    ),
    (
        "/admin/projects",
        "post",
        "201",
        &[
            (
                "SetProjectQuota",
                "set_project_quota",
                &[("project_id", "$response.body#/id")],
            ),
            (
                "DeleteProject",
                "delete_project",
                &[("project_id", "$response.body#/id")],
            ),
            (
                "SetProjectMember",
                "set_project_member",
                &[("project_id", "$response.body#/id")],
            ),
            (
                "RemoveProjectMember",
                "remove_project_member",
                &[("project_id", "$response.body#/id")],
            ),
        ],
    ),
    (
        "/plugins",
        "post",
        "201",
        &[
            (
                "ListVersions",
                "list_versions",
                &[("problem_id", "$response.body#/name")],
            ),
            (
                "SetCurrentVersion",
                "set_current_version",
                &[("problem_id", "$response.body#/name")],
            ),
            (
                "RetireVersion",
                "retire_version",
                &[
                    ("problem_id", "$response.body#/name"),
                    ("version", "$response.body#/version"),
                ],
            ),
        ],
    ),
];

/// What a job's id leads to.
const JOB_LINKS: &[Target] = &[
    ("GetJob", "get_job", &[("job_id", "$response.body#/job")]),
    (
        "GetJobOutput",
        "get_job_output",
        &[("job_id", "$response.body#/job")],
    ),
    (
        "GetJobInput",
        "get_job_input",
        &[("job_id", "$response.body#/job")],
    ),
    (
        "JobEvents",
        "job_events",
        &[("job_id", "$response.body#/job")],
    ),
    (
        "GetIncumbents",
        "get_incumbents",
        &[("job_id", "$response.body#/job")],
    ),
    (
        "FinishJob",
        "finish_job",
        &[("job_id", "$response.body#/job")],
    ),
    (
        "RerunJob",
        "rerun_job",
        &[("job_id", "$response.body#/job")],
    ),
    (
        "CancelJob",
        "cancel_job",
        &[("job_id", "$response.body#/job")],
    ),
];

/// Sets [`LINKS`] on the responses they belong to.
fn add_links(paths: &mut Map<String, Value>) {
    for (path, method, status, links) in LINKS {
        let Some(response) = paths
            .get_mut(*path)
            .and_then(|item| item.get_mut(*method))
            .and_then(|operation| operation["responses"].get_mut(*status))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let made: Map<String, Value> = links
            .iter()
            .map(|(name, operation, parameters)| {
                let parameters: Map<String, Value> = parameters
                    .iter()
                    .map(|(parameter, from)| ((*parameter).to_owned(), json!(from)))
                    .collect();
                (
                    (*name).to_owned(),
                    json!({"operationId": operation, "parameters": parameters}),
                )
            })
            .collect();
        response.insert("links".into(), Value::Object(made));
    }
}

/// The document for the use cases `registry` serves now.
pub fn document(registry: &PluginRegistry) -> Value {
    let mut document: Value =
        serde_json::from_str(include_str!("../../../schemas/api/openapi.json"))
            .unwrap_or_else(|_| json!({}));
    let mut schemas = Map::new();
    for (name, text) in BODY_SCHEMAS {
        if let Ok(schema) = serde_json::from_str(text) {
            add_component(&mut schemas, name, schema);
        }
    }
    for (name, schema) in own_schemas()
        .into_iter()
        .chain(crate::api::experiments::openapi_experiments::schemas())
    {
        schemas.insert(name.to_owned(), schema);
    }
    let mut paths = document["paths"].as_object().cloned().unwrap_or_default();
    // Before the use cases' launches copy the generic one, links and all.
    add_links(&mut paths);
    let mut names = Vec::new();
    let mut plugins = registry.list();
    plugins.sort_by(|a, b| a.info.name.cmp(&b.info.name));
    for plugin in plugins {
        let name = &plugin.info.name;
        let component = format!("{}Input", pascal(name));
        let Ok(input) = serde_json::from_str::<Value>(&plugin.info.input_schema) else {
            continue;
        };
        add_component(&mut schemas, &component, input);
        // Its parameters' schemas as the component has them, references rewritten.
        let dataset = format!("{}DatasetLaunch", pascal(name));
        let launch = dataset_launch(&dataset, &schemas[&component], &plugin.dataset_parameters);
        schemas.insert(dataset.clone(), launch);
        if let Some(schema) = schemas.get_mut(&component) {
            allow_launch_fields(schema, true);
        }
        let mut show = document["paths"]["/problem/{problem_id}"]["get"].clone();
        show["operationId"] = json!(format!("get_{}", snake(name)));
        let mut operation = document["paths"]["/problem/{problem_id}"]["post"].clone();
        operation["operationId"] = json!(format!("launch_{}", snake(name)));
        operation["summary"] = json!(format!("Launch a {name} job: {}", plugin.info.description));
        operation["requestBody"]["content"]["application/json"]["schema"] = json!({
            "anyOf": [
                {"$ref": format!("#/components/schemas/{component}")},
                {"$ref": format!("#/components/schemas/{dataset}")},
            ]
        });
        paths.insert(
            format!("/problem/{name}"),
            json!({"get": show, "post": operation}),
        );
        names.push(json!(name));
    }
    // The names a path's `problem_id` can take now, for generators and fuzzers.
    for path in ["/problem/{problem_id}", "/problem/{problem_id}/batch"] {
        if let Some(Value::Array(parameters)) = paths
            .get_mut(path)
            .and_then(|item| item.get_mut("parameters"))
        {
            for parameter in parameters {
                if parameter["name"] == "problem_id" {
                    parameter["schema"]["examples"] = Value::Array(names.clone());
                }
            }
        }
    }
    for schema in schemas.values_mut() {
        objects_for_booleans(schema);
    }
    document["paths"] = Value::Object(paths);
    document["components"]["schemas"] = Value::Object(schemas);
    document
}

/// JSON Schema allows `true` and `false` as schemas; OpenAPI generators want objects. Where
/// a schema stands (a property, an item, an alternative), `true` becomes `{}` and `false`
/// `{"not": {}}`, which mean the same. `additionalProperties: false` stays: generators read it.
fn objects_for_booleans(schema: &mut Value) {
    let as_object = |value: &mut Value| {
        if let Value::Bool(accepts) = *value {
            *value = if accepts {
                json!({})
            } else {
                json!({"not": {}})
            };
        }
    };
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    for (keyword, value) in object.iter_mut() {
        match keyword.as_str() {
            "properties" | "patternProperties" | "$defs" => {
                if let Some(map) = value.as_object_mut() {
                    for schema in map.values_mut() {
                        as_object(schema);
                        objects_for_booleans(schema);
                    }
                }
            }
            "items" | "not" | "contains" | "propertyNames" | "if" | "then" | "else" => {
                as_object(value);
                objects_for_booleans(value);
            }
            "additionalProperties" => objects_for_booleans(value),
            "prefixItems" | "allOf" | "anyOf" | "oneOf" => {
                if let Some(items) = value.as_array_mut() {
                    for schema in items {
                        as_object(schema);
                        objects_for_booleans(schema);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Adds `schema` under `name`, its `$defs` beside it, every reference rewritten to point
/// there, and its `$schema` and `$id` dropped: a component stands alone. A definition is named
/// as it was (`job` is `Job`) unless that name is taken, then after its schema (`JobStatusJob`
/// would be what generators call the schema's own `job` property, so it is never the choice).
fn add_component(schemas: &mut Map<String, Value>, name: &str, mut schema: Value) {
    let defs = schema
        .as_object_mut()
        .and_then(|object| {
            object.remove("$schema");
            object.remove("$id");
            object.insert("title".into(), json!(name));
            object.remove("$defs")
        })
        .and_then(|defs| match defs {
            Value::Object(defs) => Some(defs),
            _ => None,
        })
        .unwrap_or_default();
    let mut names = Map::new();
    for key in defs.keys() {
        let plain = pascal(key);
        let taken = schemas.contains_key(&plain)
            || plain == name
            || names.values().any(|named| named == &json!(plain));
        let chosen = if taken {
            format!("{}Of{name}", pascal(key))
        } else {
            plain
        };
        names.insert(key.clone(), json!(chosen));
    }
    rewrite_references(&mut schema, &names);
    schemas.insert(name.to_owned(), schema);
    for (key, mut def) in defs {
        let def_name = names[&key].as_str().unwrap_or_default().to_owned();
        rewrite_references(&mut def, &names);
        if let Some(object) = def.as_object_mut() {
            object.insert("title".into(), json!(def_name));
        }
        schemas.insert(def_name, def);
    }
}

/// `#/$defs/x` becomes `#/components/schemas/<the name `names` gives x>`.
fn rewrite_references(value: &mut Value, names: &Map<String, Value>) {
    match value {
        Value::Object(object) => {
            for (key, value) in object.iter_mut() {
                if key == "$ref"
                    && let Value::String(reference) = value
                {
                    if let Some(name) = reference
                        .strip_prefix("#/$defs/")
                        .and_then(|def| names.get(def))
                        .and_then(Value::as_str)
                    {
                        *reference = format!("#/components/schemas/{name}");
                    }
                } else {
                    rewrite_references(value, names);
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| rewrite_references(item, names)),
        _ => {}
    }
}

/// A launch body is the input with `options` and `labels` beside it: they are added to the
/// input schema's properties, and to those of each alternative that lists its own.
fn allow_launch_fields(schema: &mut Value, root: bool) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        let (options, labels) = if root {
            (
                json!({"$ref": "#/components/schemas/Options"}),
                json!({"$ref": "#/components/schemas/Labels"}),
            )
        } else {
            (json!({}), json!({}))
        };
        properties.insert("options".into(), options);
        properties.insert("labels".into(), labels);
    }
    for keyword in ["oneOf", "anyOf", "allOf"] {
        if let Some(Value::Array(branches)) = object.get_mut(keyword) {
            branches
                .iter_mut()
                .for_each(|branch| allow_launch_fields(branch, false));
        }
    }
}

/// A launch on an uploaded dataset: its identifier, `options`, `labels`, and the use case's
/// dataset parameters as its input schema describes them; nothing else.
fn dataset_launch(title: &str, input: &Value, parameters: &[String]) -> Value {
    let mut properties = Map::new();
    properties.insert(
        "data_file_identifier".into(),
        json!({"type": "string", "minLength": 1}),
    );
    properties.insert(
        "options".into(),
        json!({"$ref": "#/components/schemas/Options"}),
    );
    properties.insert(
        "labels".into(),
        json!({"$ref": "#/components/schemas/Labels"}),
    );
    for parameter in parameters {
        let mut schema = input["properties"][parameter].clone();
        if schema.is_null() {
            schema = json!(true);
        }
        properties.insert(parameter.clone(), schema);
    }
    json!({
        "title": title,
        "type": "object",
        "required": ["data_file_identifier"],
        "properties": properties,
        "additionalProperties": false,
    })
}

/// The schemas written here rather than in `schemas/api/`: bodies of this API's own
/// endpoints beyond the spec's.
/// A plugin version as the registry's routes show it, with `extra` properties (required).
fn plugin_version_schema(title: &str, extra: &[(&str, Value)]) -> Value {
    let mut schema = json!({
        "title": title,
        "type": "object",
        "required": ["name", "version", "digest", "world", "source", "file", "size", "published_at", "published_by", "current", "registry_current", "retired", "loaded", "jobs"],
        "properties": {
            "name": {"type": "string"},
            "version": {"type": "string"},
            "digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
            "world": {"type": "string", "description": "The WIT world it was built against."},
            "source": {"enum": ["built-in", "store", "directory"]},
            "file": {"type": ["string", "null"]},
            "size": {"type": ["integer", "null"], "minimum": 0, "description": "The component's bytes, for a stored version."},
            "published_at": {"anyOf": [{"$ref": "#/components/schemas/Rfc3339"}, {"type": "null"}]},
            "published_by": {"type": ["string", "null"]},
            "current": {"type": "boolean", "description": "Whether an unpinned launch on this replica gets it."},
            "registry_current": {"type": "boolean", "description": "For a stored version: whether the registry names it current, which every replica serves unless its plugins directory holds a file of this use case."},
            "shadowed_by": {"type": "string", "description": "This replica's plugins directory file that serves unpinned launches here instead, though the registry names this version current."},
            "retired": {"type": "boolean"},
            "loaded": {"type": "boolean", "description": "Whether this replica has it compiled and ready."},
            "jobs": {"type": "integer", "minimum": 0, "description": "The jobs bound to it."},
        },
        "additionalProperties": false,
    });
    for (name, property) in extra {
        schema["properties"][*name] = property.clone();
        if let Some(required) = schema["required"].as_array_mut() {
            required.push(json!(name));
        }
    }
    schema
}

fn own_schemas() -> Vec<(&'static str, Value)> {
    let status = json!({"enum": ["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED"]});
    vec![
        ("JobStatusName", {
            let mut status = status.clone();
            status["title"] = json!("JobStatusName");
            status
        }),
        (
            "Login",
            json!({
                "title": "Login",
                "type": "object",
                "required": ["username", "password"],
                "properties": {
                    "username": {"type": "string", "minLength": 1},
                    "password": {"type": "string", "minLength": 1},
                },
            }),
        ),
        ("Options", crate::domain::options::schema()),
        (
            "EvaluateBody",
            json!({
                "title": "EvaluateBody",
                "description": "A solution to score, and the input it is for: inline, or a data file of the caller's (with the use case's dataset parameters in input).",
                "type": "object",
                "required": ["solution"],
                "properties": {
                    "input": {"type": "object", "description": "The use case's input, as a launch gives it inline."},
                    "data_file_identifier": {"type": "string", "description": "A data file of the caller's, read as a launch's dataset is."},
                    "solution": {"description": "The use case's output, or the part of it that decides the objective."},
                },
                "additionalProperties": false,
            }),
        ),
        (
            "Labels",
            json!({
                "title": "Labels",
                "type": "object",
                "maxProperties": MAX_LABELS,
                "propertyNames": {"pattern": "^[A-Za-z0-9_./-]{1,63}$"},
                "additionalProperties": {"type": "string", "maxLength": 255},
            }),
        ),
        (
            "DatasetLaunch",
            json!({
                "title": "DatasetLaunch",
                "description": "A launch on an uploaded dataset; the use case's dataset parameters (GET /problem/<id>) may stand beside it.",
                "type": "object",
                "required": ["data_file_identifier"],
                "properties": {
                    "data_file_identifier": {"type": "string", "minLength": 1},
                    "options": {"$ref": "#/components/schemas/Options"},
                    "labels": {"$ref": "#/components/schemas/Labels"},
                },
            }),
        ),
        (
            "LaunchBody",
            json!({
                "title": "LaunchBody",
                "description": "The use case's input (GET /problem/<id> shows its schema) with options and labels beside it, or a DatasetLaunch.",
                "type": "object",
                "properties": {
                    "options": {"$ref": "#/components/schemas/Options"},
                    "labels": {"$ref": "#/components/schemas/Labels"},
                },
                // Options and labels alone launch nothing: some field must be the input's.
                "not": {"propertyNames": {"enum": ["options", "labels"]}},
            }),
        ),
        (
            "BatchBody",
            json!({
                "title": "BatchBody",
                "type": "object",
                "required": ["jobs"],
                "properties": {
                    "jobs": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": MAX_BATCH,
                        "items": {"$ref": "#/components/schemas/LaunchBody"},
                    },
                },
                "additionalProperties": false,
            }),
        ),
        (
            "DataFileList",
            json!({
                "title": "DataFileList",
                "type": "object",
                "required": ["data_files", "next"],
                "properties": {
                    "data_files": {"type": "array", "items": {"$ref": "#/components/schemas/DataFile"}},
                    "next": {
                        "type": ["string", "null"],
                        "description": "The before of the next page; null on the last.",
                    },
                },
                "additionalProperties": false,
            }),
        ),
        (
            "BatchAccepted",
            json!({
                "title": "BatchAccepted",
                "type": "object",
                "required": ["detail", "jobs"],
                "properties": {
                    "detail": {"type": "string"},
                    "jobs": {"type": "array", "items": {"type": "string"}},
                },
                "additionalProperties": false,
            }),
        ),
        (
            "UseCaseSummary",
            json!({
                "title": "UseCaseSummary",
                "type": "object",
                "required": ["name", "version", "aliases", "description", "digest", "source", "file", "loaded_at", "media_types"],
                "properties": {
                    "name": {"type": "string"},
                    "version": {"type": "string"},
                    "aliases": {"type": "array", "items": {"type": "string"}},
                    "description": {"type": "string"},
                    "digest": {"type": "string"},
                    "source": {"enum": ["built-in", "store", "directory"]},
                    "file": {"type": ["string", "null"], "description": "The file's name, for a plugin from this replica's plugins directory."},
                    "loaded_at": {"type": "string", "format": "date-time"},
                    "media_types": {"type": "array", "items": {"type": "string"}},
                },
            }),
        ),
        ("PluginVersion", plugin_version_schema("PluginVersion", &[])),
        (
            "PluginVersions",
            json!({
                "title": "PluginVersions",
                "type": "object",
                "required": ["name", "versions"],
                "properties": {
                    "name": {"type": "string"},
                    "versions": {"type": "array", "items": {"$ref": "#/components/schemas/PluginVersion"}},
                },
                "additionalProperties": false,
            }),
        ),
        ("PublishedPlugin", {
            let mut schema = plugin_version_schema(
                "PublishedPlugin",
                &[
                    (
                        "created",
                        json!({"type": "boolean", "description": "False when the same bytes were published before."}),
                    ),
                    (
                        "report",
                        json!({"type": "array", "items": {"type": "string"}, "description": "What `caseload plugin check` prints of it."}),
                    ),
                ],
            );
            schema["properties"]["gate"] = json!({"$ref": "#/components/schemas/Gate"});
            schema
        }),
        ("Incumbents", incumbents_schema()),
        ("CreateApiKey", accounts::create_key()),
        ("ApiKeyCreated", accounts::key_created()),
        ("ApiKeyList", accounts::key_list()),
        ("User", accounts::user_view()),
        ("UserList", accounts::user_list()),
        ("NewUser", accounts::new_user()),
        ("UserChange", accounts::user_change()),
        ("AuditPage", accounts::audit_page()),
        ("Project", accounts::project_view()),
        ("ProjectList", accounts::project_list()),
        ("UserProjectList", accounts::user_project_list()),
        ("NewProject", accounts::new_project()),
        ("ProjectMembership", accounts::project_membership()),
        ("ProjectQuota", accounts::project_quota()),
        (
            "Rerun",
            json!({
                "title": "Rerun",
                "type": "object",
                "properties": {
                    "version": {"type": "string", "minLength": 1, "description": "A version (1.3.0) or a digest (sha256:<hex>) to run instead of the job's own."},
                    "options": {"type": "object", "description": "Options that replace the job's own, one by one (as a launch's options)."},
                },
                "additionalProperties": false,
            }),
        ),
        (
            "SetCurrent",
            json!({
                "title": "SetCurrent",
                "type": "object",
                "required": ["version"],
                "properties": {
                    "version": {"type": "string", "minLength": 1, "description": "A version (1.3.0) or a digest (sha256:<hex>)."},
                },
                "additionalProperties": false,
            }),
        ),
        (
            "JobListEntry",
            json!({
                "title": "JobListEntry",
                "type": "object",
                "required": ["id", "problem", "status", "started_at", "end_at", "created_at", "ended_at", "labels"],
                "properties": {
                    "id": {"type": "string"},
                    "problem": {"type": "string"},
                    "status": {"$ref": "#/components/schemas/JobStatusName"},
                    "started_at": {"type": "string"},
                    "end_at": {"type": "string"},
                    "created_at": {"$ref": "#/components/schemas/Rfc3339"},
                    "ended_at": {"$ref": "#/components/schemas/Rfc3339End"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "objective": {"type": ["number", "null"], "description": "The output's objective, where the use case declares one; null until it completed."},
                    "objective_sense": {"enum": ["minimize", "maximize", null]},
                },
                "additionalProperties": false,
            }),
        ),
        (
            "JobList",
            json!({
                "title": "JobList",
                "type": "object",
                "required": ["jobs", "next"],
                "properties": {
                    "jobs": {"type": "array", "items": {"$ref": "#/components/schemas/JobListEntry"}},
                    "next": {"type": ["string", "null"]},
                },
                "additionalProperties": false,
            }),
        ),
    ]
}

/// `GET /job/<id>/incumbents`'s answer.
fn incumbents_schema() -> Value {
    let incumbent = json!({
        "type": "object",
        "required": ["execution_id", "seq", "objective", "found_at", "solution"],
        "properties": {
            "execution_id": {"type": "string"},
            "seq": {"type": "integer", "minimum": 1, "description": "1 for the execution's first report; numbers not kept are missing."},
            "objective": {"type": "number"},
            "found_at": {"type": "string", "format": "date-time", "description": "When the host received it."},
            "solution": {"description": "The JSON the plugin reported."},
        },
        "additionalProperties": false,
    });
    json!({
        "title": "Incumbents",
        "type": "object",
        "required": ["job_id", "incumbents"],
        "properties": {
            "job_id": {"type": "string"},
            "incumbents": {"type": "array", "items": incumbent},
        },
        "additionalProperties": false,
    })
}

/// `max-cut` → `MaxCut`.
fn pascal(name: &str) -> String {
    name.split(|character: char| !character.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut characters = part.chars();
            characters.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + characters.as_str()
            })
        })
        .collect()
}

/// `max-cut` → `max_cut`.
fn snake(name: &str) -> String {
    name.chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() {
                character.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_link_leads_to_an_operation_with_those_parameters() {
        let document: Value =
            serde_json::from_str(include_str!("../../../schemas/api/openapi.json"))
                .expect("the document parses");
        let mut paths = document["paths"].as_object().cloned().expect("paths");
        add_links(&mut paths);
        // Each operation by id, with the names of its path's parameters.
        let mut operations: std::collections::HashMap<String, Vec<String>> = Default::default();
        for (path, item) in &paths {
            let in_path: Vec<String> = path
                .split('/')
                .filter_map(|part| part.strip_prefix('{')?.strip_suffix('}'))
                .map(str::to_owned)
                .collect();
            for operation in item.as_object().expect("a path item").values() {
                if let Some(id) = operation["operationId"].as_str() {
                    operations.insert(id.to_owned(), in_path.clone());
                }
            }
        }
        for (path, method, status, links) in LINKS {
            let response = &paths[*path][*method]["responses"][*status];
            assert!(response["links"].is_object(), "{method} {path} {status}");
            for (name, operation, parameters) in *links {
                let wanted = operations
                    .get(*operation)
                    .unwrap_or_else(|| panic!("{name}: no operation {operation}"));
                for (parameter, _) in *parameters {
                    assert!(
                        wanted.iter().any(|known| known == parameter),
                        "{name}: {operation} takes no path parameter {parameter}"
                    );
                }
            }
        }
    }

    #[test]
    fn defs_become_components_and_references_follow_them() {
        let mut schemas = Map::new();
        schemas.insert("End".into(), json!({}));
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:x",
            "title": "Job status (response of GET /job/<job_id>)",
            "properties": {"end": {"$ref": "#/$defs/end"}},
            "$defs": {
                "end": {"anyOf": [{"$ref": "#/$defs/timestamp"}, {"const": ""}]},
                "timestamp": {"type": "string"},
            },
        });
        add_component(&mut schemas, "JobStatus", schema);
        assert_eq!(
            schemas["JobStatus"],
            json!({
                "title": "JobStatus",
                "properties": {"end": {"$ref": "#/components/schemas/EndOfJobStatus"}},
            })
        );
        assert_eq!(
            schemas["EndOfJobStatus"]["anyOf"][0],
            json!({"$ref": "#/components/schemas/Timestamp"})
        );
        assert_eq!(schemas["Timestamp"]["title"], "Timestamp");
    }

    #[test]
    fn names_become_type_and_function_names() {
        assert_eq!(pascal("max-cut"), "MaxCut");
        assert_eq!(pascal("qubo"), "Qubo");
        assert_eq!(snake("max-cut"), "max_cut");
    }
}
