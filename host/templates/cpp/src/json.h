/* A small reader of JSON text (C and C++), enough for inputs the host has already checked against the
 * input schema: it reads what the schema allows and stops at the first thing it does not
 * expect (returning 0), so a wrong guess about the shape fails loudly instead of reading
 * past the end. */
#ifndef JSON_H
#define JSON_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *at;
    const char *end;
} json_reader;

static inline void json_skip_space(json_reader *r) {
    while (r->at < r->end && (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r'))
        r->at++;
}

/* Consumes `c` (after any space) if it comes next. */
static inline int json_accept(json_reader *r, char c) {
    json_skip_space(r);
    if (r->at < r->end && *r->at == c) {
        r->at++;
        return 1;
    }
    return 0;
}

/* Reads a string without escapes into `out` (at most `size` - 1 bytes, zero-terminated). */
static inline int json_string(json_reader *r, char *out, size_t size) {
    if (!json_accept(r, '"'))
        return 0;
    size_t n = 0;
    while (r->at < r->end && *r->at != '"') {
        if (*r->at == '\\' || n + 1 >= size)
            return 0;
        out[n++] = *r->at++;
    }
    if (r->at == r->end)
        return 0;
    r->at++;
    out[n] = '\0';
    return 1;
}

static inline int json_number(json_reader *r, double *out) {
    json_skip_space(r);
    char buffer[64];
    size_t n = 0;
    while (r->at + n < r->end && n + 1 < sizeof buffer && strchr("+-0123456789.eE", r->at[n]))
        n++;
    if (n == 0)
        return 0;
    memcpy(buffer, r->at, n);
    buffer[n] = '\0';
    char *stop;
    *out = strtod(buffer, &stop);
    if (stop != buffer + n)
        return 0;
    r->at += n;
    return 1;
}

/* Reads an array of numbers into a new array from malloc (`*count` of them). */
static inline int json_numbers(json_reader *r, double **out, size_t *count) {
    if (!json_accept(r, '['))
        return 0;
    size_t size = 0, capacity = 16;
    double *values = (double *)malloc(capacity * sizeof *values);
    if (!values)
        return 0;
    if (!json_accept(r, ']')) {
        do {
            if (size == capacity) {
                capacity *= 2;
                double *grown = (double *)realloc(values, capacity * sizeof *values);
                if (!grown) {
                    free(values);
                    return 0;
                }
                values = grown;
            }
            if (!json_number(r, &values[size++])) {
                free(values);
                return 0;
            }
        } while (json_accept(r, ','));
        if (!json_accept(r, ']')) {
            free(values);
            return 0;
        }
    }
    *out = values;
    *count = size;
    return 1;
}

#endif
