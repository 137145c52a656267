/* Two other versions of the Command schema, derived from ours, for the tests
 * and the fuzz harness of schema resolution: the "previous" one, from before
 * Task gained its optional fields (retry, attempt, metadata, kafka_target,
 * late_policy, on_success), and a "next"
 * one that adds fields (Task.priority, Callback.tags, Cancel.reason) and
 * lists the payload union the other way round. Header-only: each binary
 * that includes it gets its own copy. */
#ifndef MOONCAKE_COMMAND_VERSIONS_H
#define MOONCAKE_COMMAND_VERSIONS_H

#include <jansson.h>
#include <string.h>

#include "codec.h"

/* payload union -> Submit record -> its task field's record. */
static json_t *cv_task(json_t *command)
{
    json_t *branches =
        json_object_get(json_array_get(json_object_get(command, "fields"), 0), "type");
    json_t *submit = json_array_get(branches, 0);
    if (strcmp(json_string_value(json_object_get(submit, "name")), "Submit") != 0)
        submit = json_array_get(branches, 1);
    return json_object_get(json_array_get(json_object_get(submit, "fields"), 0), "type");
}

static json_t *cv_field(json_t *record, const char *name, size_t *index)
{
    json_t *fields = json_object_get(record, "fields");
    for (size_t i = 0; i < json_array_size(fields); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(fields, i), "name")), name) ==
            0) {
            if (index)
                *index = i;
            return json_array_get(fields, i);
        }
    return NULL;
}

/* The previous Command: Task without retry, attempt, metadata, kafka_target
 * and late_policy. Caller frees the text. */
static char *command_schema_previous(void)
{
    json_t *c = json_loads(mc_schema_json(MC_SCHEMA_COMMAND), 0, NULL);
    json_t *task = cv_task(c);
    const char *gone[] = {"retry",        "attempt",     "metadata",
                          "kafka_target", "late_policy", "on_success"};
    for (size_t g = 0; g < sizeof gone / sizeof gone[0]; g++) {
        size_t i;
        if (cv_field(task, gone[g], &i))
            json_array_remove(json_object_get(task, "fields"), i);
    }
    char *text = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return text;
}

/* The next Command: new fields with defaults, union order reversed. Caller
 * frees the text. */
static char *command_schema_next(void)
{
    json_t *c = json_loads(mc_schema_json(MC_SCHEMA_COMMAND), 0, NULL);
    json_t *task = cv_task(c);
    size_t due = 0;
    cv_field(task, "due_at", &due);
    json_array_insert_new(
        json_object_get(task, "fields"), due + 1,
        json_pack("{s:s, s:s, s:i}", "name", "priority", "type", "int", "default", 0));
    json_t *callback = json_object_get(cv_field(task, "callback", NULL), "type");
    json_array_append_new(json_object_get(callback, "fields"),
                          json_pack("{s:s, s:{s:s, s:s}, s:[]}", "name", "tags", "type", "type",
                                    "array", "items", "string", "default"));
    json_t *branches = json_object_get(json_array_get(json_object_get(c, "fields"), 0), "type");
    json_t *cancel = json_incref(json_array_get(branches, 1));
    json_array_remove(branches, 1);
    json_array_append_new(
        json_object_get(cancel, "fields"),
        json_pack("{s:s, s:[s,s], s:n}", "name", "reason", "type", "null", "string", "default"));
    /* Cancel must be defined before Submit now: it comes first in the union. */
    json_array_insert_new(branches, 0, cancel);
    char *text = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return text;
}

#endif
