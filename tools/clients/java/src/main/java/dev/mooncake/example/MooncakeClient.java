/*
 * Submit and cancel mooncake tasks from Java by producing Avro Commands straight to Kafka:
 * the client contract of README.md ("Submitting tasks straight to Kafka").
 *
 *   java -jar mooncake-client.jar submit -b kafka:9092 --app shop --url https://x/hook \
 *       --delay-ms 60000
 *   java -jar mooncake-client.jar submit -b kafka:9092 --app shop --kafka-topic shop.reminders \
 *       --kafka-key order-42 --kafka-value '{"order":42}' --delay-ms 60000
 *   java -jar mooncake-client.jar cancel -b kafka:9092 --app shop --task-id 0193...
 *
 * A task either calls a URL (--url) or has mooncake produce a record to a Kafka topic at its
 * due time (--kafka-topic; callback.url is then "", and mooncake's --target-topics must allow
 * the topic for the app). --late-ms N --late-action RUN|DROP|DEAD: what happens to a task that
 * could only start more than N ms after its due time.
 *
 * What matters, in any language:
 *   - key = "app_id/task_id";
 *   - the Java client's default partitioner (murmur2 for keyed records): every command of
 *     a key lands on the partition where mooncake's router versions it, so nothing is set;
 *   - value = Avro single-object encoding of mooncake.Command, which is exactly what the
 *     generated classes' toByteBuffer() writes (C3 01, fingerprint, body).
 */
package dev.mooncake.example;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import mooncake.Callback;
import mooncake.Cancel;
import mooncake.Command;
import mooncake.KafkaTarget;
import mooncake.LateAction;
import mooncake.LatePolicy;
import mooncake.RetryPolicy;
import mooncake.Submit;
import mooncake.Task;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class MooncakeClient implements AutoCloseable {
    private final KafkaProducer<String, byte[]> producer;
    private final String topic;

    /** One idempotent producer for the tasks topic; extra holds any producer property. */
    public MooncakeClient(String bootstrap, String topicPrefix, Map<String, String> extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        // idempotence: a retried send is never a second command
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        // a dead broker or a missing topic: an error after 30 s, not a 1-2 minute wait
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.putAll(extra);
        producer = new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer());
        topic = topicPrefix + "tasks";
    }

    /** A task as the schema wants it; retry null means mooncake's configured policy. */
    public static Task task(String appId, String taskId, long dueAtMs, String url, String method,
                            Map<String, String> headers, String body, int timeoutMs,
                            RetryPolicy retry) {
        Callback cb = Callback.newBuilder()
                .setUrl(url)
                .setMethod(method)
                .setHeaders(new HashMap<>(headers))
                .setBody(ByteBuffer.wrap(body.getBytes(StandardCharsets.UTF_8)))
                .setTimeoutMs(timeoutMs)
                .build();
        return Task.newBuilder()
                .setAppId(appId)
                .setTaskId(taskId)
                .setDueAt(Instant.ofEpochMilli(dueAtMs))
                .setCallback(cb)
                .setRetry(retry)
                .setCreatedAt(Instant.now())
                .build();
    }

    /**
     * A task that delivers a record instead of calling a URL: at its due time mooncake produces
     * target to its topic, exactly once for read_committed consumers. The callback is the empty
     * one the contract asks for (url ""). retry null means mooncake's configured policy.
     */
    public static Task kafkaTask(String appId, String taskId, long dueAtMs, KafkaTarget target,
                                 RetryPolicy retry) {
        Callback none = Callback.newBuilder()
                .setUrl("")
                .setMethod("POST")
                .setHeaders(new HashMap<>())
                .setBody(ByteBuffer.allocate(0))
                .setTimeoutMs(0)
                .build();
        return Task.newBuilder()
                .setAppId(appId)
                .setTaskId(taskId)
                .setDueAt(Instant.ofEpochMilli(dueAtMs))
                .setCallback(none)
                .setKafkaTarget(target)
                .setRetry(retry)
                .setCreatedAt(Instant.now())
                .build();
    }

    /**
     * The record a Kafka-target task delivers: key and value null for none (a null value is a
     * tombstone); mooncake adds the headers mooncake-task and mooncake-due-at.
     */
    public static KafkaTarget kafkaTarget(String topic, byte[] key, byte[] value,
                                          Map<String, String> headers) {
        return KafkaTarget.newBuilder()
                .setTopic(topic)
                .setKey(key == null ? null : ByteBuffer.wrap(key))
                .setValue(value == null ? null : ByteBuffer.wrap(value))
                .setHeaders(new HashMap<>(headers))
                .build();
    }

    /** Past maxLateMs after the due time: RUN anyway, DROP (a Result DROPPED) or DEAD. */
    public static LatePolicy latePolicy(long maxLateMs, LateAction action) {
        return LatePolicy.newBuilder().setMaxLateMs(maxLateMs).setAction(action).build();
    }

    /** Sends a Submit and waits for the broker's acknowledgement. */
    public RecordMetadata submit(Task t) throws Exception {
        Command c = Command.newBuilder().setPayload(Submit.newBuilder().setTask(t).build()).build();
        return send(t.getAppId() + "/" + t.getTaskId(), c);
    }

    /** Sends a Cancel and waits for the broker's acknowledgement. */
    public RecordMetadata cancel(String appId, String taskId) throws Exception {
        Cancel cancel = Cancel.newBuilder()
                .setAppId(appId)
                .setTaskId(taskId)
                .setRequestedAt(Instant.now())
                .build();
        return send(appId + "/" + taskId, Command.newBuilder().setPayload(cancel).build());
    }

    private RecordMetadata send(String key, Command c) throws Exception {
        ByteBuffer value = c.toByteBuffer(); // single-object encoding
        byte[] bytes = new byte[value.remaining()];
        value.get(bytes);
        try {
            return producer.send(new ProducerRecord<>(topic, key, bytes)).get();
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }

    @Override
    public void close() {
        producer.close();
    }

    private static final String USAGE =
            "usage: mooncake-client (submit|cancel) -b BOOTSTRAP --app APP [--task-id ID]...\n"
            + "         [--topic-prefix P] (--delay-ms N | --due-at-ms T)\n"
            + "         (--url URL [--method M] [--header 'Name: value']... [--timeout-ms N]\n"
            + "          | --kafka-topic T [--kafka-key K] [--kafka-value V]\n"
            + "            [--kafka-header name=value]...) [--body TEXT]\n"
            + "         [--retry MAX_ATTEMPTS:INITIAL_BACKOFF_MS:MULTIPLIER:MAX_BACKOFF_MS]\n"
            + "         [--late-ms N --late-action RUN|DROP|DEAD] [-X key=value]...\n"
            + "Submits or cancels a mooncake task by producing a Command to <prefix>tasks.\n"
            + "--task-id may be repeated: one command per id, the same callback for each.\n"
            + "--kafka-topic: at the due time mooncake produces a record to T instead of calling\n"
            + "a URL (its --target-topics must allow T for the app); --kafka-value defaults to\n"
            + "--body if given, else null (a tombstone).\n";

    private static int fail(String msg) {
        System.err.println("mooncake-client: " + msg + " (see -h)");
        return 2;
    }

    static int run(String[] args) {
        if (args.length == 0 || args[0].equals("-h") || args[0].equals("--help")) {
            System.out.print(USAGE);
            return args.length == 0 ? 2 : 0;
        }
        String cmd = args[0];
        if (!cmd.equals("submit") && !cmd.equals("cancel"))
            return fail("unknown command '" + cmd + "'");
        String bootstrap = "localhost:9092", prefix = "mooncake.", app = null;
        List<String> ids = new ArrayList<>();
        String url = null, method = null, body = null;
        String kafkaTopic = null, kafkaKey = null, kafkaValue = null;
        Long delay = null, dueAt = null, lateMs = null;
        Integer timeoutMs = null;
        LateAction lateAction = null;
        RetryPolicy retry = null;
        Map<String, String> headers = new LinkedHashMap<>();
        Map<String, String> kafkaHeaders = new LinkedHashMap<>();
        Map<String, String> extra = new HashMap<>();
        List<String> rest = new ArrayList<>(List.of(args).subList(1, args.length));
        try {
            while (!rest.isEmpty()) {
                String flag = rest.remove(0);
                if (flag.equals("-h") || flag.equals("--help")) {
                    System.out.print(USAGE);
                    return 0;
                }
                if (rest.isEmpty())
                    return fail(flag + " needs a value");
                String v = rest.remove(0);
                switch (flag) {
                    case "-b", "--bootstrap-servers" -> bootstrap = v;
                    case "--topic-prefix" -> prefix = v;
                    case "--app" -> app = v;
                    case "--task-id" -> ids.add(v);
                    case "--url" -> url = v;
                    case "--method" -> method = v.toUpperCase();
                    case "--delay-ms" -> delay = Long.parseLong(v);
                    case "--due-at-ms" -> dueAt = Long.parseLong(v);
                    case "--body" -> body = v;
                    case "--timeout-ms" -> timeoutMs = Integer.parseInt(v);
                    case "--kafka-topic" -> kafkaTopic = v;
                    case "--kafka-key" -> kafkaKey = v;
                    case "--kafka-value" -> kafkaValue = v;
                    case "--kafka-header" -> {
                        int eq = v.indexOf('=');
                        if (eq <= 0)
                            return fail("--kafka-header '" + v + "': expected name=value");
                        kafkaHeaders.put(v.substring(0, eq).trim(), v.substring(eq + 1));
                    }
                    case "--late-ms" -> lateMs = Long.parseLong(v);
                    case "--late-action" -> {
                        try {
                            lateAction = LateAction.valueOf(v.toUpperCase());
                        } catch (IllegalArgumentException e) {
                            return fail("--late-action '" + v + "': expected RUN, DROP or DEAD");
                        }
                    }
                    case "--retry" -> {
                        String[] r = v.split(":");
                        if (r.length != 4)
                            return fail("--retry '" + v + "': expected "
                                        + "MAX_ATTEMPTS:INITIAL_BACKOFF_MS:MULTIPLIER:MAX_BACKOFF_MS");
                        retry = RetryPolicy.newBuilder()
                                .setMaxAttempts(Integer.parseInt(r[0]))
                                .setInitialBackoffMs(Long.parseLong(r[1]))
                                .setMultiplier(Double.parseDouble(r[2]))
                                .setMaxBackoffMs(Long.parseLong(r[3]))
                                .build();
                    }
                    case "--header" -> {
                        int colon = v.indexOf(':');
                        if (colon <= 0)
                            return fail("--header '" + v + "': expected Name: value");
                        headers.put(v.substring(0, colon).trim(), v.substring(colon + 1).trim());
                    }
                    case "-X" -> {
                        int eq = v.indexOf('=');
                        if (eq <= 0)
                            return fail("-X '" + v + "': expected key=value");
                        extra.put(v.substring(0, eq), v.substring(eq + 1));
                    }
                    default -> {
                        return fail("unknown flag '" + flag + "'");
                    }
                }
            }
        } catch (NumberFormatException e) {
            return fail("not a number: " + e.getMessage());
        }
        if (app == null || app.contains("/"))
            return fail("--app is required and has no '/' (the key is app_id/task_id)");
        if (cmd.equals("submit")) {
            if (url != null && kafkaTopic != null)
                return fail("--url and --kafka-topic are both given: a task either calls a URL "
                            + "or delivers a record");
            if ((url == null && kafkaTopic == null) || (delay == null) == (dueAt == null))
                return fail("submit needs --url or --kafka-topic, and one of --delay-ms, "
                            + "--due-at-ms");
            if (kafkaTopic != null) {
                if (kafkaTopic.isEmpty())
                    return fail("--kafka-topic is empty");
                if (method != null || !headers.isEmpty() || timeoutMs != null)
                    return fail((method != null ? "--method" : !headers.isEmpty() ? "--header"
                                 : "--timeout-ms") + " is for --url; with --kafka-topic, see "
                                + "--kafka-header");
            } else if (kafkaKey != null || kafkaValue != null || !kafkaHeaders.isEmpty()) {
                return fail((kafkaKey != null ? "--kafka-key" : kafkaValue != null
                             ? "--kafka-value" : "--kafka-header") + " needs --kafka-topic");
            }
            if ((lateMs == null) != (lateAction == null))
                return fail("--late-ms and --late-action go together: "
                            + (lateMs == null ? "--late-ms" : "--late-action") + " missing");
            if (lateMs != null && lateMs < 0)
                return fail("--late-ms " + lateMs + ": must not be negative");
        }
        if (cmd.equals("cancel") && ids.isEmpty())
            return fail("cancel needs --task-id (repeat it to cancel several)");
        if (ids.isEmpty())
            ids.add(UUID.randomUUID().toString());

        try (MooncakeClient client = new MooncakeClient(bootstrap, prefix, extra)) {
            for (String id : ids) {
                RecordMetadata md;
                String when = "";
                if (cmd.equals("submit")) {
                    long due = dueAt != null ? dueAt : System.currentTimeMillis() + delay;
                    Task t;
                    if (kafkaTopic != null) {
                        String value = kafkaValue != null ? kafkaValue : body;
                        t = kafkaTask(app, id, due, kafkaTarget(kafkaTopic, utf8(kafkaKey),
                                utf8(value), kafkaHeaders), retry);
                    } else {
                        t = task(app, id, due, url, method != null ? method : "POST", headers,
                                 body != null ? body : "", timeoutMs != null ? timeoutMs : 30000,
                                 retry);
                    }
                    if (lateMs != null)
                        t.setLatePolicy(latePolicy(lateMs, lateAction));
                    md = client.submit(t);
                    when = " due_at=" + due;
                } else {
                    md = client.cancel(app, id);
                }
                System.out.printf("%s %s/%s partition=%d offset=%d%s%n", cmd, app, id,
                        md.partition(), md.offset(), when);
            }
            return 0;
        } catch (ConfigException e) {
            return fail(e.getMessage()); // a bad -X value: the producer was never made
        } catch (Exception e) {
            // The cause chain says what is wrong (a bad -X property, an unknown host).
            StringBuilder why = new StringBuilder(e.toString());
            for (Throwable t = e.getCause(); t != null; t = t.getCause())
                why.append(": ").append(t);
            System.err.println("mooncake-client: " + cmd + " failed: " + why);
            return 1;
        }
    }

    private static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }
}
