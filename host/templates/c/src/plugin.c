/* {{name}}: a caseload use case in C. `caseload plugin build` makes the component;
 * `caseload plugin watch .` rebuilds, checks and publishes it on every change.
 *
 * The functions below are the exports of the caseload:plugin world, as wit-bindgen's C
 * generator names them in target/bindings/plugin.h; the host's imports (log, progress,
 * cancelled, incumbent) are declared there too. */

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "plugin.h"
#include "schemas.h"

typedef exports_caseload_plugin_use_case_list_violation_t violations_t;

/* A text that grows as it is written to, for the JSON output. */
typedef struct {
    char *text;
    size_t length, capacity;
} buffer_t;

static int append(buffer_t *buffer, const char *format, ...) {
    for (;;) {
        va_list args;
        va_start(args, format);
        size_t room = buffer->capacity - buffer->length;
        int n = vsnprintf(buffer->text ? buffer->text + buffer->length : NULL, room, format, args);
        va_end(args);
        if (n < 0)
            return 0;
        if ((size_t)n < room) {
            buffer->length += (size_t)n;
            return 1;
        }
        size_t capacity = buffer->capacity * 2 + (size_t)n + 64;
        char *grown = realloc(buffer->text, capacity);
        if (!grown)
            return 0;
        buffer->text = grown;
        buffer->capacity = capacity;
    }
}

/* The input's numbers: {"numbers": [...]} (the host checked it against the schema). */
static int read_numbers(plugin_string_t *input, double **numbers, size_t *count) {
    json_reader r = {(const char *)input->ptr, (const char *)input->ptr + input->len};
    char key[16];
    return json_accept(&r, '{') && json_string(&r, key, sizeof key) && strcmp(key, "numbers") == 0 &&
           json_accept(&r, ':') && json_numbers(&r, numbers, count) && json_accept(&r, '}');
}

static void violation(violations_t *out, const char *pointer, const char *message) {
    out->ptr = realloc(out->ptr, (out->len + 1) * sizeof *out->ptr);
    plugin_string_dup(&out->ptr[out->len].pointer, pointer);
    plugin_string_dup(&out->ptr[out->len].message, message);
    out->len++;
}

void exports_caseload_plugin_use_case_describe(exports_caseload_plugin_use_case_plugin_info_t *ret) {
    plugin_string_dup(&ret->name, "{{name}}");
    plugin_string_dup(&ret->version, "0.1.0");
    ret->aliases.ptr = NULL;
    ret->aliases.len = 0;
    plugin_string_dup(&ret->description,
                      "Splits numbers into two sides with sums as close as possible (largest first, greedy).");
    plugin_string_dup(&ret->input_schema, INPUT_SCHEMA);
    plugin_string_dup(&ret->output_schema, OUTPUT_SCHEMA);
    ret->media_types.ptr = malloc(sizeof *ret->media_types.ptr);
    ret->media_types.len = 1;
    plugin_string_dup(&ret->media_types.ptr[0], "application/json");
}

bool exports_caseload_plugin_use_case_decode(plugin_string_t *media_type, plugin_list_u8_t *data,
                                             plugin_string_t *ret, violations_t *err) {
    (void)data;
    (void)ret;
    /* Only JSON datasets, which the host reads itself. */
    char message[128];
    snprintf(message, sizeof message, "cannot read %.*s files", (int)media_type->len,
             (const char *)media_type->ptr);
    *err = (violations_t){0};
    violation(err, "", message);
    return false;
}

/* What the schema cannot say; runs at submission, so a client hears of it as a 422. */
bool exports_caseload_plugin_use_case_validate(plugin_string_t *input, violations_t *err) {
    double *numbers;
    size_t count;
    *err = (violations_t){0};
    if (!read_numbers(input, &numbers, &count)) {
        violation(err, "", "expected {\"numbers\": [...]}");
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        if (numbers[i] < 0) {
            char pointer[32];
            snprintf(pointer, sizeof pointer, "/numbers/%zu", i);
            violation(err, pointer, "must not be negative");
        }
    }
    free(numbers);
    return err->len == 0;
}

static const double *sort_key;

static int larger_first(const void *a, const void *b) {
    double x = sort_key[*(const size_t *)a], y = sort_key[*(const size_t *)b];
    return (x < y) - (x > y);
}

static bool failed(exports_caseload_plugin_use_case_plugin_error_t *err, const char *message) {
    err->tag = EXPORTS_CASELOAD_PLUGIN_USE_CASE_PLUGIN_ERROR_FAILED;
    plugin_string_dup(&err->val.failed, message);
    return false;
}

bool exports_caseload_plugin_use_case_run(plugin_string_t *input,
                                          exports_caseload_plugin_use_case_run_options_t *options,
                                          plugin_string_t *ret,
                                          exports_caseload_plugin_use_case_plugin_error_t *err) {
    (void)options; /* time_limit_ms, seed, max_iterations: a greedy pass needs none */
    double *numbers;
    size_t count;
    if (!read_numbers(input, &numbers, &count))
        return failed(err, "the input is not {\"numbers\": [...]}");
    size_t *order = malloc((count + 1) * sizeof *order);
    int *sides = malloc((count + 1) * sizeof *sides);
    for (size_t i = 0; i < count; i++)
        order[i] = i;
    sort_key = numbers;
    qsort(order, count, sizeof *order, larger_first);
    double sums[2] = {0, 0};
    for (size_t done = 0; done < count; done++) {
        size_t index = order[done];
        int side = sums[1] < sums[0] ? 1 : 0;
        sides[index] = side;
        sums[side] += numbers[index];
        if (done % 1024 == 0) {
            if (caseload_plugin_host_cancelled()) {
                free(numbers), free(order), free(sides);
                return failed(err, "cancelled");
            }
            plugin_string_t message;
            plugin_string_set(&message, "");
            caseload_plugin_host_progress((double)done / (double)count, &message);
        }
    }
    buffer_t output = {0};
    append(&output, "{\"sides\":[");
    for (size_t i = 0; i < count; i++)
        append(&output, i ? ",%d" : "%d", sides[i]);
    append(&output, "],\"difference\":%.17g}", fabs(sums[0] - sums[1]));
    free(numbers), free(order), free(sides);
    if (!output.text)
        return failed(err, "out of memory");
    ret->ptr = (uint8_t *)output.text;
    ret->len = output.length;
    return true;
}

/* Scores a given solution without searching (POST /problem/{{name}}/evaluate): the objective
 * run would report for it, and each rule it breaks. This use case does not score solutions;
 * one that does fills in *ret (objective, feasible, violations, details as JSON text) and
 * returns true, or sets err to EXPORTS_CASELOAD_PLUGIN_EVALUATOR_EVALUATE_ERROR_INVALID with
 * violations for a solution it cannot read. */
bool exports_caseload_plugin_evaluator_evaluate(plugin_string_t *input, plugin_string_t *solution,
                                                exports_caseload_plugin_evaluator_evaluation_t *ret,
                                                exports_caseload_plugin_evaluator_evaluate_error_t *err) {
    (void)input;
    (void)solution;
    (void)ret;
    err->tag = EXPORTS_CASELOAD_PLUGIN_EVALUATOR_EVALUATE_ERROR_UNSUPPORTED;
    return false;
}
