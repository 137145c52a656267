/* The per-app allow-list of Kafka target topics; see kafka_targets.h. */
#include "kafka_targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "kafka.h"

#define ERR_PREFIX "MOONCAKE_TARGET_TOPICS"

typedef struct target_rule {
    char *app_id; /* "*": every app */
    char *topic;  /* without the '*' when prefix */
    bool prefix;
} target_rule;

struct mc_kafka_targets {
    target_rule *v;
    size_t n, cap;
    char *own_prefix;
};

bool mc_topic_name_ok(const char *topic)
{
    size_t n = strlen(topic);
    if (n == 0 || n > MC_TOPIC_NAME_MAX || strcmp(topic, ".") == 0 || strcmp(topic, "..") == 0)
        return false;
    for (const char *p = topic; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return false;
    return true;
}

static int add_rule(void *arg, const char *entry, size_t len, const char *where, char *err,
                    size_t errlen)
{
    mc_kafka_targets *t = arg;
    const char *eq = memchr(entry, '=', len);
    if (!eq || eq == entry || eq == entry + len - 1) {
        snprintf(err, errlen, ERR_PREFIX ": %s: '%.*s' is not app=topic", where,
                 (int)(len > 80 ? 80 : len), entry);
        return -1;
    }
    const char *app = entry, *topic = eq + 1;
    size_t app_len = (size_t)(eq - entry), topic_len = len - app_len - 1;
    mc_trim(&app, &app_len);
    mc_trim(&topic, &topic_len);
    bool prefix = topic_len > 0 && topic[topic_len - 1] == '*';
    size_t name_len = prefix ? topic_len - 1 : topic_len;
    char name[MC_TOPIC_NAME_MAX + 1];
    if (app_len == 0 || memchr(app, '/', app_len) || name_len > MC_TOPIC_NAME_MAX) {
        snprintf(err, errlen, ERR_PREFIX ": %s: '%.*s' needs an app id (no '/') and a topic", where,
                 (int)(len > 80 ? 80 : len), entry);
        return -1;
    }
    memcpy(name, topic, name_len);
    name[name_len] = '\0';
    /* A prefix may be empty ("app=*": every topic not mooncake's) or end in
     * a separator; the characters it has must be legal ones. */
    if ((name_len > 0 || !prefix) && !mc_topic_name_ok(name) &&
        !(prefix &&
          strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
              name_len)) {
        snprintf(err, errlen,
                 ERR_PREFIX ": %s: topic '%s' is not a Kafka topic name (letters, digits, . _ -)",
                 where, name);
        return -1;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        target_rule *v = realloc(t->v, cap * sizeof *v);
        if (!v)
            goto nomem;
        t->v = v;
        t->cap = cap;
    }
    target_rule *r = &t->v[t->n];
    r->app_id = strndup(app, app_len);
    r->topic = strdup(name);
    r->prefix = prefix;
    if (!r->app_id || !r->topic) {
        free(r->app_id);
        free(r->topic);
        goto nomem;
    }
    t->n++;
    return 0;
nomem:
    snprintf(err, errlen, ERR_PREFIX ": out of memory");
    return -1;
}

mc_kafka_targets *mc_kafka_targets_parse(const char *spec, const char *own_prefix, char *err,
                                         size_t errlen)
{
    mc_kafka_targets *t = calloc(1, sizeof *t);
    if (!t || !(t->own_prefix = strdup(own_prefix ? own_prefix : ""))) {
        free(t);
        snprintf(err, errlen, ERR_PREFIX ": out of memory");
        return NULL;
    }
    if (spec && mc_config_each_entry(spec, ERR_PREFIX, add_rule, t, err, errlen) != 0) {
        mc_kafka_targets_free(t);
        return NULL;
    }
    return t;
}

void mc_kafka_targets_free(mc_kafka_targets *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].app_id);
        free(t->v[i].topic);
    }
    free(t->v);
    free(t->own_prefix);
    free(t);
}

bool mc_topic_is_own(const char *own_prefix, const char *topic)
{
    if (own_prefix && own_prefix[0])
        return strncmp(topic, own_prefix, strlen(own_prefix)) == 0;
    for (size_t i = 0; i < mc_n_topic_specs; i++)
        if (strcmp(topic, mc_topic_specs[i].suffix) == 0)
            return true;
    return strncmp(topic, "mooncakectl-", 12) == 0;
}

static bool rule_matches(const target_rule *r, const char *app_id, const char *topic)
{
    if (strcmp(r->app_id, "*") != 0 && strcmp(r->app_id, app_id) != 0)
        return false;
    return r->prefix ? strncmp(topic, r->topic, strlen(r->topic)) == 0
                     : strcmp(topic, r->topic) == 0;
}

bool mc_kafka_target_allowed(const mc_kafka_targets *t, const char *app_id, const char *topic,
                             const char *field, char *why, size_t whylen)
{
    if (!mc_topic_name_ok(topic)) {
        snprintf(why, whylen,
                 "%s '%.100s' is not a Kafka topic name (1 to %d of letters, digits, "
                 ". _ -)",
                 field, topic, MC_TOPIC_NAME_MAX);
        return false;
    }
    /* Kafka's internal topics, and mooncake's own: a record there would be
     * read as a command, a fired task or a Result. */
    if (strncmp(topic, "__", 2) == 0 || (t && mc_topic_is_own(t->own_prefix, topic))) {
        snprintf(why, whylen, "%s '%.100s' is one of Kafka's or mooncake's own topics", field,
                 topic);
        return false;
    }
    for (size_t i = 0; t && i < t->n; i++)
        if (rule_matches(&t->v[i], app_id, topic))
            return true;
    snprintf(why, whylen,
             "%s '%.100s' is not allowed for app '%.100s' (MOONCAKE_TARGET_TOPICS lists what each "
             "app may write)",
             field, topic, app_id);
    return false;
}

bool mc_task_target_ok(const mc_kafka_targets *t, const mc_task *task, const mc_task_field_names *n,
                       char *why, size_t whylen)
{
    const char *target = n->kafka_target ? n->kafka_target : "kafka_target";
    char field[128];
    snprintf(field, sizeof field, "%s.topic", target);
    if (task->has_kafka_target &&
        !mc_kafka_target_allowed(t, task->app_id, task->kafka_target.topic, field, why, whylen))
        return false;
    for (size_t i = 0; i < task->n_on_success; i++) {
        const mc_follow_up *f = &task->on_success[i];
        snprintf(field, sizeof field, "%s[%zu].%s.topic",
                 n->on_success ? n->on_success : "on_success", i, target);
        if (f->has_kafka_target &&
            !mc_kafka_target_allowed(t, task->app_id, f->kafka_target.topic, field, why, whylen))
            return false;
    }
    return true;
}
