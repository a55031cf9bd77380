// {{name}}: a caseload use case in C++. `caseload plugin build` makes the component;
// `caseload plugin watch .` rebuilds, checks and publishes it on every change.
//
// The functions below are the exports of the caseload:plugin world, as wit-bindgen's C
// generator names them in target/bindings/plugin.h; the host's imports (log, progress,
// cancelled, incumbent) are declared there too. Built without exceptions: report failures
// through the `err` results.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "json.h"
#include "plugin.h"
#include "schemas.h"

namespace {

using violations_t = exports_caseload_plugin_use_case_list_violation_t;
using plugin_error_t = exports_caseload_plugin_use_case_plugin_error_t;

// A string the bindings free once the host has read it: a copy from malloc.
void give(plugin_string_t *out, const std::string &text) {
    out->ptr = static_cast<uint8_t *>(std::malloc(text.size() + 1));
    std::memcpy(out->ptr, text.data(), text.size());
    out->len = text.size();
}

// The input's numbers: {"numbers": [...]} (the host checked it against the schema).
bool read_numbers(const plugin_string_t *input, std::vector<double> &numbers) {
    const char *text = reinterpret_cast<const char *>(input->ptr);
    json_reader r = {text, text + input->len};
    char key[16];
    double *values = nullptr;
    size_t count = 0;
    bool ok = json_accept(&r, '{') && json_string(&r, key, sizeof key) &&
              std::string(key) == "numbers" && json_accept(&r, ':') &&
              json_numbers(&r, &values, &count) && json_accept(&r, '}');
    if (values) {
        numbers.assign(values, values + count);
        std::free(values);
    }
    return ok;
}

void set_violations(violations_t *err, const std::vector<std::pair<std::string, std::string>> &found) {
    err->len = found.size();
    err->ptr = static_cast<exports_caseload_plugin_use_case_violation_t *>(
        std::malloc(found.size() * sizeof *err->ptr));
    for (size_t i = 0; i < found.size(); i++) {
        give(&err->ptr[i].pointer, found[i].first);
        give(&err->ptr[i].message, found[i].second);
    }
}

bool failed(plugin_error_t *err, const std::string &message) {
    err->tag = EXPORTS_CASELOAD_PLUGIN_USE_CASE_PLUGIN_ERROR_FAILED;
    give(&err->val.failed, message);
    return false;
}

}  // namespace

extern "C" {

void exports_caseload_plugin_use_case_describe(exports_caseload_plugin_use_case_plugin_info_t *ret) {
    give(&ret->name, "{{name}}");
    give(&ret->version, "0.1.0");
    ret->aliases = {nullptr, 0};
    give(&ret->description,
         "Splits numbers into two sides with sums as close as possible (largest first, greedy).");
    give(&ret->input_schema, INPUT_SCHEMA);
    give(&ret->output_schema, OUTPUT_SCHEMA);
    ret->media_types.ptr = static_cast<plugin_string_t *>(std::malloc(sizeof(plugin_string_t)));
    ret->media_types.len = 1;
    give(&ret->media_types.ptr[0], "application/json");
}

bool exports_caseload_plugin_use_case_decode(plugin_string_t *media_type, plugin_list_u8_t *,
                                             plugin_string_t *, violations_t *err) {
    // Only JSON datasets, which the host reads itself.
    std::string type(reinterpret_cast<const char *>(media_type->ptr), media_type->len);
    std::vector<std::pair<std::string, std::string>> found;
    found.emplace_back("", "cannot read " + type + " files");
    set_violations(err, found);
    return false;
}

// What the schema cannot say; runs at submission, so a client hears of it as a 422.
bool exports_caseload_plugin_use_case_validate(plugin_string_t *input, violations_t *err) {
    std::vector<double> numbers;
    std::vector<std::pair<std::string, std::string>> found;
    if (!read_numbers(input, numbers)) {
        found.emplace_back("", "expected {\"numbers\": [...]}");
    }
    for (size_t i = 0; i < numbers.size(); i++) {
        if (numbers[i] < 0) {
            found.emplace_back("/numbers/" + std::to_string(i), "must not be negative");
        }
    }
    if (found.empty()) {
        return true;
    }
    set_violations(err, found);
    return false;
}

bool exports_caseload_plugin_use_case_run(plugin_string_t *input,
                                          exports_caseload_plugin_use_case_run_options_t *,
                                          plugin_string_t *ret, plugin_error_t *err) {
    std::vector<double> numbers;
    if (!read_numbers(input, numbers)) {
        return failed(err, "the input is not {\"numbers\": [...]}");
    }
    std::vector<size_t> order(numbers.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return numbers[a] > numbers[b]; });
    std::vector<int> sides(numbers.size());
    double sums[2] = {0, 0};
    for (size_t done = 0; done < order.size(); done++) {
        size_t index = order[done];
        int side = sums[1] < sums[0] ? 1 : 0;
        sides[index] = side;
        sums[side] += numbers[index];
        if (done % 1024 == 0) {
            if (caseload_plugin_host_cancelled()) {
                return failed(err, "cancelled");
            }
            plugin_string_t message = {nullptr, 0};
            caseload_plugin_host_progress(double(done) / double(order.size()), &message);
        }
    }
    std::string output = "{\"sides\":[";
    for (size_t i = 0; i < sides.size(); i++) {
        output += (i ? "," : "") + std::to_string(sides[i]);
    }
    char difference[32];
    std::snprintf(difference, sizeof difference, "%.17g", std::fabs(sums[0] - sums[1]));
    output += std::string("],\"difference\":") + difference + "}";
    give(ret, output);
    return true;
}

// Scores a given solution without searching (POST /problem/{{name}}/evaluate): the objective
// run would report for it, and each rule it breaks. This use case does not score solutions; one
// that does fills in *ret (objective, feasible, violations, details as JSON text) and returns
// true, or sets err to EXPORTS_CASELOAD_PLUGIN_EVALUATOR_EVALUATE_ERROR_INVALID with violations
// for a solution it cannot read.
bool exports_caseload_plugin_evaluator_evaluate(plugin_string_t *, plugin_string_t *,
                                                exports_caseload_plugin_evaluator_evaluation_t *,
                                                exports_caseload_plugin_evaluator_evaluate_error_t *err) {
    err->tag = EXPORTS_CASELOAD_PLUGIN_EVALUATOR_EVALUATE_ERROR_UNSUPPORTED;
    return false;
}

}  // extern "C"
