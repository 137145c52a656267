// Reads a Kafka broker's JMX counters for tools/bench/bench-e2e's cost scenario:
// compiled with the JDK's javac at bench time, nothing else on its classpath.
//
// Usage: java -cp DIR BenchJmx HOST:PORT 'PATTERN=ATTR,ATTR' ... [threads]
// Connects to the broker's JMX connector (tools/kafka-local start --jmx-port),
// prints "connected", then for every line read on stdin prints, for each MBean
// matching each ObjectName pattern, one line per numeric attribute it has of
// those named:
//   <object name> TAB <attribute> TAB <value>
// with "threads" also the CPU time of every live Java thread of the broker:
//   thread TAB <thread id> TAB <thread name> TAB <CPU ns>
// and a line "." after the last. Exits at the end of stdin; exits 1 with one
// line on stderr when it cannot connect or a query fails.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public final class BenchJmx {
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: BenchJmx HOST:PORT PATTERN=ATTR,ATTR ...");
            System.exit(2);
        }
        List<ObjectName> patterns = new ArrayList<>();
        List<String[]> attrs = new ArrayList<>();
        boolean threads = false;
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("threads")) {
                threads = true;
                continue;
            }
            int eq = args[i].lastIndexOf('=');
            patterns.add(new ObjectName(args[i].substring(0, eq)));
            attrs.add(args[i].substring(eq + 1).split(","));
        }
        JMXServiceURL url =
            new JMXServiceURL("service:jmx:rmi:///jndi/rmi://" + args[0] + "/jmxrmi");
        JMXConnector jmxc;
        try {
            jmxc = JMXConnectorFactory.connect(url, null);
        } catch (Exception e) {
            System.err.println("BenchJmx: cannot connect to " + url + ": " + e);
            System.exit(1);
            return;
        }
        MBeanServerConnection conn = jmxc.getMBeanServerConnection();
        com.sun.management.ThreadMXBean tmx = ManagementFactory.newPlatformMXBeanProxy(
            conn, ManagementFactory.THREAD_MXBEAN_NAME, com.sun.management.ThreadMXBean.class);
        System.out.println("connected");
        System.out.flush();
        java.io.BufferedReader in =
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
        StringBuilder out = new StringBuilder();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        while (in.readLine() != null) {
            out.setLength(0);
            try {
                // One round trip per MBean: in parallel, so that a read under load
                // takes tens of milliseconds, not hundreds.
                List<ObjectName> names = new ArrayList<>();
                List<String[]> wanted = new ArrayList<>();
                for (int i = 0; i < patterns.size(); i++) {
                    for (ObjectName name : new TreeSet<>(conn.queryNames(patterns.get(i), null))) {
                        names.add(name);
                        wanted.add(attrs.get(i));
                    }
                }
                List<Future<AttributeList>> got = new ArrayList<>();
                for (int i = 0; i < names.size(); i++) {
                    final ObjectName name = names.get(i);
                    final String[] a = wanted.get(i);
                    got.add(pool.submit(() -> conn.getAttributes(name, a)));
                }
                for (int i = 0; i < names.size(); i++) {
                    for (Attribute a : got.get(i).get().asList()) {
                        if (a.getValue() instanceof Number) {
                            out.append(names.get(i)).append('\t').append(a.getName()).append('\t')
                                .append(a.getValue()).append('\n');
                        }
                    }
                }
                if (threads) {
                    long[] ids = tmx.getAllThreadIds();
                    ThreadInfo[] infos = tmx.getThreadInfo(ids);
                    long[] cpu = tmx.getThreadCpuTime(ids);
                    for (int i = 0; i < ids.length; i++) {
                        if (infos[i] != null && cpu[i] >= 0) {
                            out.append("thread\t").append(ids[i]).append('\t')
                                .append(infos[i].getThreadName()).append('\t').append(cpu[i])
                                .append('\n');
                        }
                    }
                }
            } catch (Exception e) {
                System.err.println("BenchJmx: query failed: " + e);
                System.exit(1);
            }
            out.append(".\n");
            System.out.print(out);
            System.out.flush();
        }
        pool.shutdown();
        jmxc.close();
    }
}
