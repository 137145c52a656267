/* The view's insides, shared by view.c (the table of tasks, folding records,
 * commits, forgetting, restore) and view_questions.c (the door other threads
 * ask through, and answering on the view's thread). */
#ifndef MOONCAKE_VIEW_IMPL_H
#define MOONCAKE_VIEW_IMPL_H

#include "view.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "codec.h"
#include "kafka_targets.h"
#include "kafka.h"
#include "keymap.h"
#include "part_table.h"
#include "task_rules.h"
#include "timing_wheel.h"
#include "view_list.h"
#include "view_task.h"
#include "wheel_topic.h"
#include "writer_schemas.h"

enum { IN_TASKS, IN_WHEEL, IN_READY, IN_RESULTS, IN_DEAD, N_INPUTS };
/* Used by both files. */
static const char *const view_inputs[] = {"tasks", "wheel", "ready", "results", "dead", NULL};

/* How often a waiting question looks again at the consumer's position. */
#define QUESTION_POLL_MS 2
#define FORGET_BATCH 1000
/* How long the reads of the partitions' ends may take, on the view's
 * thread, before the question gets 503. */
#define END_OFFSET_TIMEOUT_MS 2000

/* ---- the door: questions from other threads ----------------------------------- */

typedef enum question_kind { Q_TASK, Q_LIST, Q_STATS } question_kind;

typedef struct question {
    struct question *next;
    question_kind kind;
    char *key; /* Q_TASK: the task's key */
    size_t key_len;
    bool stored; /* Q_TASK: answer the task's StoredTask bytes, in base64 */
    /* Q_LIST, Q_STATS: the filter, its strings owned here, and the
     * partitions asked about (none: every one the view holds). */
    mc_view_filter filter;
    char *app_id, *after_uuid;
    int32_t *asked;
    size_t n_asked;
    int64_t deadline_ms; /* wall clock */
    /* The partitions answered for, once the view has looked, and where each
     * input of each ended then: ends[i * N_INPUTS + input]. */
    int32_t *parts;
    size_t n_parts;
    int64_t *ends;
    int status;
    char *body;
    bool done, abandoned;
} question;

struct mc_view_door {
    pthread_mutex_t lock;
    pthread_cond_t answered;
    int efd;
    question *queue; /* asked, not yet taken by the view; under lock */
    bool open;       /* a view is running behind the door; under lock */
};

/* ---- the table -------------------------------------------------------------------- */

typedef struct view_part {
    int32_t partition;
    mc_keymap *tasks;
    mc_timing_wheel *forgets;
    int64_t wheel_position;  /* the wheel's last marker in `ready`; -1: none yet */
    int64_t position_logged; /* the wheel_position in the changelog */
    mc_view_task *dirty;     /* changed since the last commit */
    size_t bytes;
    mc_keymap *indexes;            /* app_index by app id: each app's tasks in order */
    mc_keymap *apps;               /* mc_view_app_stats by changelog key */
    mc_view_app_stats *dirty_apps; /* changed since the last commit */
    int64_t apps_swept_at;         /* when apps with an empty hour were last forgotten */
} view_part;

typedef struct view {
    const mc_logger *logger;
    mc_view_door *door; /* NULL: nobody asks */
    mc_output *changelog;
    char topics[N_INPUTS][256];
    char changelog_topic[256];
    int32_t partitions; /* of the inputs, for a key's partition */
    int64_t history_ms;
    mc_part_table parts;
    mc_codec_options codec;
    mc_codec_writer *writers;
    size_t n_writers;
    mc_kafka_targets *targets; /* the router's allow-list: what it refuses is no version */
    mc_arena *arena;
    mc_buf buf;
    question *waiting; /* taken from the door, not answered yet */
    mc_gauge *tasks_gauge, *bytes_gauge, *restore_seconds;
    mc_counter *answered, *behind, *forgotten, *unreadable;
} view;

/* One app's tasks of a partition, in order (view_list.h). */
typedef struct app_index {
    mc_keynode node;
    mc_view_index ix;
    char app[];
} app_index;

#define APP_INDEX_KEY_OFFSET (offsetof(app_index, app) - offsetof(app_index, node))

/* All on the view's thread. */

/* ---- view.c: the table ---- */

/* The table of a partition the view holds, or NULL. */
view_part *view_part_of(view *v, int32_t partition);
/* The task of key in p, or NULL. */
mc_view_task *view_find_task(view_part *p, const void *key, size_t len);
/* The index of an app's tasks in p, made when missing and create is true
 * (NULL on ENOMEM, or when missing and not to be made). */
app_index *view_index_of(view_part *p, const char *app, size_t app_len, bool create);

/* ---- view_questions.c: the questions ---- */

/* Answers q with status and body (taken over) and wakes its asker. */
void view_finish_question(view *v, question *q, int status, char *body);
/* A malloc'd sentence: fmt with a formatted in; NULL on ENOMEM. */
char *view_sentence(const char *fmt, const char *a);
/* Whether the view still holds every partition the question waits for. */
bool view_still_held(view *v, const question *q);
/* Answers what can be answered; the rest keep waiting. */
void view_look_at_waiting(view *v, mc_ctx *ctx);
/* The door's eventfd is readable: takes the questions queued (a descriptor
 * callback, processor.h). */
int view_on_questions(void *arg, int fd, int revents, mc_ctx *ctx);

#endif
