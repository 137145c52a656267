/* The view processor on the broker-free driver: it folds every kind of
 * record the five topics carry (the wheel's voids and the router's records
 * with headers among them) into the task of its key, logs each changed task
 * to its changelog, and a new instance restored from that changelog alone
 * answers the same; a refused command in `tasks` or a record keyed under
 * another task does not stand in for the real one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kafka.h"
#include "simkit.h"
#include "view.h"
#include "view_list.h"
#include "view_task.h"

#define T0 INT64_C(1800000000000)

static const char *const flags[] = {"--commit-interval-ms=100", "--advertised-url=http://x:1",
                                    NULL};

/* The view's changelog record of a/id, decoded (NULL: none, or a tombstone). */
static mc_view_task *logged(sim_kafka *k, const char *id, int64_t *wheel_position)
{
    char key[256];
    size_t kl = kit_key(id, key, sizeof key);
    sim_rec *r;
    size_t n = sim_read(k, kit_topic("views"), 0, &r);
    const sim_rec *last = NULL;
    for (size_t i = 0; i < n; i++) {
        if (r[i].key_len == sizeof MC_VIEW_POSITION_KEY - 1 &&
            memcmp(r[i].key, MC_VIEW_POSITION_KEY, r[i].key_len) == 0 && wheel_position) {
            char text[24] = "";
            memcpy(text, r[i].value, r[i].value_len < 23 ? r[i].value_len : 23);
            *wheel_position = strtoll(text, NULL, 10);
        }
        if (r[i].key_len == kl && memcmp(r[i].key, key, kl) == 0)
            last = &r[i];
    }
    mc_view_task *t = NULL;
    if (last && last->value) {
        const char *why = NULL;
        t = mc_view_task_decode(key, kl, last->value, last->value_len, &why);
        CHECK(t != NULL, "the changelog record of %s is unreadable: %s", id, why);
    }
    free(r);
    return t;
}

static const char *state_of(sim_kafka *k, const char *id)
{
    int64_t position = -1;
    mc_view_task *t = logged(k, id, &position);
    if (!t)
        return "none";
    const char *s = mc_view_state_name(mc_view_task_state(t, position, sim_now(k)));
    mc_view_task_free(t);
    return s;
}

static void append_result(sim_kafka *k, int64_t version, const char *id, int32_t attempt,
                          mc_outcome outcome)
{
    mc_result r = {.app_id = "a",
                   .task_id = id,
                   .attempt = attempt,
                   .due_at = T0,
                   .started_at = T0,
                   .finished_at = T0 + 5,
                   .http_status = outcome == MC_OUTCOME_SUCCEEDED ? 200 : 503,
                   .outcome = outcome,
                   .error = "",
                   .version = version,
                   .response_size = -1};
    mc_buf b = {0};
    mc_encode_result(&r, &b);
    char key[256];
    size_t kl = kit_key(id, key, sizeof key);
    sim_append(k, kit_topic("results"), 0, key, kl, b.data, b.len, NULL, 0);
    mc_buf_free(&b);
}

/* The wheel's position marker in `ready`. */
static void append_marker(sim_kafka *k, int64_t position)
{
    char text[24];
    int n = snprintf(text, sizeof text, "%lld", (long long)position);
    mc_header h = {MC_WHEEL_POSITION_HEADER, text, (size_t)n};
    sim_append(k, kit_topic("ready"), 0, NULL, 0, NULL, 0, &h, 1);
}

int main(void)
{
    sim_kafka *k = sim_kafka_new(1, T0);
    mc_config *cfg = kit_config("view", flags);
    sim_inst *v = sim_inst_new(k, &mc_view_processor, cfg, NULL);
    CHECK(v && sim_assign_all(v) == 0);

    /* done: submitted, routed, fired, succeeded. */
    mc_task done = kit_task("done", T0 + 100, "http://h.example/cb");
    int64_t done_v = kit_tasks_submit(k, 0, &done);
    kit_wheel_submit(k, 0, done_v, &done, false);
    kit_ready_submit(k, 0, done_v, &done);
    append_result(k, done_v, "done", 1, MC_OUTCOME_SUCCEEDED);
    /* far: in the store. */
    mc_task far = kit_task("far", T0 + 86400000, "http://h.example/cb");
    int64_t far_v = kit_tasks_submit(k, 0, &far);
    kit_wheel_submit(k, 0, far_v, &far, true);
    /* gone: a cancel the wheel has passed (its marker is past the cancel). */
    mc_task gone = kit_task("gone", T0 + 60000, "http://h.example/cb");
    int64_t gone_v = kit_tasks_submit(k, 0, &gone);
    kit_wheel_submit(k, 0, gone_v, &gone, false);
    int64_t cancel_v = kit_tasks_cancel(k, 0, "gone", T0);
    int64_t cancel_at = kit_wheel_cancel(k, 0, cancel_v, "gone", T0);
    /* The wheel's void of a stale far retry: a Cancel with an attempt header,
     * which is no client's cancel. */
    mc_wheel_entry void_entry = {
        .version = far_v,
        .command = {.kind = MC_CMD_CANCEL,
                    .cancel = {.app_id = "a", .task_id = "far", .requested_at = T0}}};
    mc_buf b = {0};
    mc_encode_wheel_entry(&void_entry, &b);
    mc_header attempt = {MC_ATTEMPT_HEADER, "2", 1};
    sim_append(k, kit_topic("wheel"), 0, "a/far", 5, b.data, b.len, &attempt, 1);
    mc_buf_free(&b);
    append_marker(k, cancel_at + 1);
    /* A command the router refuses (not http) re-submitting "done", and one
     * keyed under "far" whose body names another task: neither is a version. */
    mc_task bad = kit_task("done", T0 + 100, "ftp://h.example/cb");
    kit_tasks_submit(k, 0, &bad);
    mc_task other = kit_task("elsewhere", T0 + 100, "http://h.example/cb");
    mc_command c = {.kind = MC_CMD_SUBMIT, .submit = other};
    mc_encode_command(&c, &b);
    sim_append(k, kit_topic("tasks"), 0, "a/far", 5, b.data, b.len, NULL, 0);
    mc_buf_free(&b);

    CHECK(sim_settle(v, 50) == 0);
    CHECK(sim_commit(v) == 0);
    CHECK(strcmp(state_of(k, "done"), "succeeded") == 0, "%s", state_of(k, "done"));
    CHECK(strcmp(state_of(k, "far"), "pendingStore") == 0, "%s", state_of(k, "far"));
    CHECK(strcmp(state_of(k, "gone"), "cancelled") == 0, "%s", state_of(k, "gone"));
    CHECK(strcmp(state_of(k, "elsewhere"), "none") == 0, "a record keyed a/far made no task");
    mc_view_task *far_task = logged(k, "far", NULL);
    CHECK(far_task && far_task->version == far_v && far_task->n_older == 0);
    mc_view_task_free(far_task);

    /* A new instance, restored from the changelog, answers the same: its
     * gauge counts what it holds. */
    sim_crash(v);
    sim_inst *w = sim_inst_new(k, &mc_view_processor, cfg, NULL);
    CHECK(w && sim_assign_all(w) == 0);
    CHECK(sim_settle(w, 50) == 0);
    CHECK(sim_gauge(w, "mooncake_view_tasks", NULL) == 3, "%g",
          sim_gauge(w, "mooncake_view_tasks", NULL));
    CHECK(strcmp(state_of(k, "gone"), "cancelled") == 0);
    CHECK(sim_stop(w) == 0);

    /* The partition count grows to 2: a key whose home is now partition 1
     * is forgotten at partition 0 by the next restore (a tombstone), where
     * it would otherwise stay for good. */
    const char *moved = NULL;
    static const char *const ids[] = {"done", "far", "gone"};
    for (size_t i = 0; i < 3 && !moved; i++) {
        char key[64];
        size_t kl = kit_key(ids[i], key, sizeof key);
        if (mc_key_partition(key, kl, 2) == 1)
            moved = ids[i];
    }
    CHECK(moved != NULL, "one of the keys moves with 2 partitions");
    static const char *const all[] = {"tasks", "wheel", "ready", "results", "dead", "views"};
    for (size_t i = 0; i < 6; i++)
        sim_set_partitions(k, kit_topic(all[i]), 2);
    sim_inst *x = sim_inst_new(k, &mc_view_processor, cfg, NULL);
    CHECK(x && sim_assign_all(x) == 0);
    CHECK(sim_settle(x, 50) == 0 && sim_commit(x) == 0);
    if (moved)
        CHECK(strcmp(state_of(k, moved), "none") == 0, "%s is still at its old home", moved);
    /* After it, records of keys whose home is partition 1 still arrive at
     * partition 0: a retry's next attempt of a call fired before the growth,
     * and a client's Submit placed by the old count. Neither makes a task
     * there (only a key's home tells its story: a copy there would be listed
     * twice, stuck), and a dead letter keyed like the view's own changelog
     * keys is not taken for a task. */
    if (moved) {
        mc_task retry = kit_task(moved, T0 + 5000, "http://h.example/cb");
        retry.attempt = 2;
        kit_wheel_submit(k, 0, 1, &retry, false);
    }
    const char *stray = NULL;
    static const char *const strays[] = {"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"};
    for (size_t i = 0; i < 8 && !stray; i++) {
        char key[64];
        size_t kl = kit_key(strays[i], key, sizeof key);
        if (mc_key_partition(key, kl, 2) == 1)
            stray = strays[i];
    }
    CHECK(stray != NULL);
    mc_task st = kit_task(stray ? stray : "s1", T0 + 5000, "http://h.example/cb");
    kit_tasks_submit(k, 0, &st);
    mc_dead_letter dl = {.reason = "test", .source_topic = kit_topic("tasks"), .failed_at = T0};
    mc_encode_dead_letter(&dl, &b);
    sim_append(k, kit_topic("dead"), 0, MC_VIEW_STATS_PREFIX "a", sizeof MC_VIEW_STATS_PREFIX,
               b.data, b.len, NULL, 0);
    mc_buf_free(&b);
    CHECK(sim_settle(x, 50) == 0 && sim_commit(x) == 0);
    if (moved)
        CHECK(strcmp(state_of(k, moved), "none") == 0, "%s is back at its old home", moved);
    if (stray)
        CHECK(strcmp(state_of(k, stray), "none") == 0, "%s is held away from its home", stray);
    /* Held: the first three keys still at home at partition 0, and none else. */
    int at_home = 0;
    for (size_t i = 0; i < 3; i++) {
        char key[64];
        size_t kl = kit_key(ids[i], key, sizeof key);
        at_home += mc_key_partition(key, kl, 2) == 0;
    }
    CHECK(sim_gauge(x, "mooncake_view_tasks", NULL) == at_home, "%g tasks held, %d at home",
          sim_gauge(x, "mooncake_view_tasks", NULL), at_home);
    /* The call fired at the old home before the growth ends there: its
     * final Result is the key's story at the old home (it reaches nowhere
     * else), until the history forgets it. */
    if (moved) {
        append_result(k, 1, moved, 1, MC_OUTCOME_SUCCEEDED);
        CHECK(sim_settle(x, 50) == 0 && sim_commit(x) == 0);
        CHECK(strcmp(state_of(k, moved), "succeeded") == 0, "%s after its final Result: %s", moved,
              state_of(k, moved));
    }
    CHECK(sim_stop(x) == 0);
    kit_config_free(cfg);
    sim_kafka_free(k);
    return check_exit("test_view_sim");
}
